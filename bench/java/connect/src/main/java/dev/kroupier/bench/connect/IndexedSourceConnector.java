package dev.kroupier.bench.connect;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.connect.source.SourceConnector;

/**
 * What the benchmark's source connectors share: {@code tasks.max} tasks with the connector's
 * config, each told its index N in {@link #TASK_INDEX}, as kroupier's tasks are named by
 * index. A bad config fails the connector with Connect's own message ({@link #config()} parses
 * it at start).
 */
public abstract class IndexedSourceConnector extends SourceConnector {
    /** The task's index N; set by {@link #taskConfigs}. */
    public static final String TASK_INDEX = "task.index";

    private Map<String, String> props;

    @Override
    public String version() {
        return "1";
    }

    @Override
    public void start(Map<String, String> props) {
        config().parse(props);
        this.props = new HashMap<>(props);
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
}
