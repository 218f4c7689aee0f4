package dev.kroupier.bench.connect;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.source.SourceConnector;

/**
 * A source connector that needs no outside system: {@code tasks.max} tasks, each of which, while
 * it runs, appends a beat line to {@code journal.dir/task-N.log} in kroupier's journal format
 * ({@code <unix_ms> <worker-id> <generation>}) and produces no records. The same journal
 * checker then measures Kafka Connect and kroupier's quickstart: who ran which task when.
 *
 * <p>Config: {@code journal.dir} (required), {@code beat.ms} (default 100, as quickstart's
 * {@code --beat-ms}). The worker id comes from the worker JVM's system property
 * {@code kroupier.bench.worker} (Connect tells a task nothing about its worker).
 */
public class JournalSourceConnector extends SourceConnector {
    /** Where the task journals go; every worker must see the same directory. */
    public static final String JOURNAL_DIR = "journal.dir";
    /** How often a running task beats, in milliseconds. */
    public static final String BEAT_MS = "beat.ms";
    /** The task's index N (its journal is task-N.log); set by {@link #taskConfigs}. */
    public static final String TASK_INDEX = "task.index";

    static final ConfigDef CONFIG = new ConfigDef()
            .define(JOURNAL_DIR, ConfigDef.Type.STRING, ConfigDef.Importance.HIGH,
                    "Directory of the task journals (task-N.log)")
            .define(BEAT_MS, ConfigDef.Type.LONG, 100L, ConfigDef.Range.atLeast(1),
                    ConfigDef.Importance.MEDIUM, "How often a running task beats, in ms");

    private Map<String, String> props;

    @Override
    public String version() {
        return "1";
    }

    @Override
    public void start(Map<String, String> props) {
        CONFIG.parse(props); // bad config fails the connector with Connect's own message
        this.props = new HashMap<>(props);
    }

    @Override
    public Class<? extends Task> taskClass() {
        return JournalSourceTask.class;
    }

    @Override
    public List<Map<String, String>> taskConfigs(int maxTasks) {
        List<Map<String, String>> configs = new ArrayList<>(maxTasks);
        for (int i = 0; i < maxTasks; i++) {
            Map<String, String> config = new HashMap<>(props);
            config.put(TASK_INDEX, Integer.toString(i));
            configs.add(config);
        }
        return configs;
    }

    @Override
    public void stop() {
    }

    @Override
    public ConfigDef config() {
        return CONFIG;
    }
}
