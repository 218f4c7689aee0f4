package dev.kroupier.bench.connect;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;

/**
 * One numbers task: resumes from its committed source offset, then each {@link #poll} waits
 * until the next batch is due and returns {@code per.poll} records {@code numbers-N <n>}.
 */
public class NumbersSourceTask extends SourceTask {
    private final Object wake = new Object();
    private volatile boolean stopping;
    private String name;
    private Map<String, String> partition;
    private String topic;
    private long everyMs;
    private long perPoll;
    private long next;
    private long due;

    @Override
    public String version() {
        return "1";
    }

    @Override
    public void start(Map<String, String> props) {
        var config = NumbersSourceConnector.CONFIG.parse(props);
        topic = (String) config.get(NumbersSourceConnector.TOPIC);
        everyMs = (Long) config.get(NumbersSourceConnector.EVERY_MS);
        perPoll = (Long) config.get(NumbersSourceConnector.PER_POLL);
        String index = props.get(NumbersSourceConnector.TASK_INDEX);
        if (index == null) {
            throw new ConnectException("no " + NumbersSourceConnector.TASK_INDEX + " in the task config");
        }
        name = "numbers-" + index;
        partition = Map.of("task", name);
        Map<String, Object> offset = context.offsetStorageReader().offset(partition);
        next = offset == null ? 0 : ((Number) offset.get("n")).longValue();
        due = System.currentTimeMillis();
    }

    @Override
    public List<SourceRecord> poll() throws InterruptedException {
        synchronized (wake) {
            long now = System.currentTimeMillis();
            while (!stopping && now < due) {
                wake.wait(due - now);
                now = System.currentTimeMillis();
            }
            if (stopping) {
                return null;
            }
            due = now + everyMs;
        }
        List<SourceRecord> records = new ArrayList<>((int) perPoll);
        for (long i = 0; i < perPoll; i++) {
            long n = next + i;
            records.add(new SourceRecord(partition, Map.of("n", n + 1), topic, 0,
                    Schema.STRING_SCHEMA, name + "-" + n, Schema.STRING_SCHEMA, name + " " + n));
        }
        next += perPoll;
        return records;
    }

    @Override
    public void stop() {
        synchronized (wake) {
            stopping = true;
            wake.notifyAll();
        }
    }
}
