package dev.kroupier.bench.connect;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;

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
public class JournalSourceConnector extends IndexedSourceConnector {
    /** Where the task journals go; every worker must see the same directory. */
    public static final String JOURNAL_DIR = "journal.dir";
    /** How often a running task beats, in milliseconds. */
    public static final String BEAT_MS = "beat.ms";

    static final ConfigDef CONFIG = new ConfigDef()
            .define(JOURNAL_DIR, ConfigDef.Type.STRING, ConfigDef.Importance.HIGH,
                    "Directory of the task journals (task-N.log)")
            .define(BEAT_MS, ConfigDef.Type.LONG, 100L, ConfigDef.Range.atLeast(1),
                    ConfigDef.Importance.MEDIUM, "How often a running task beats, in ms");

    @Override
    public Class<? extends Task> taskClass() {
        return JournalSourceTask.class;
    }

    @Override
    public ConfigDef config() {
        return CONFIG;
    }
}
