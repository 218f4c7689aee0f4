package dev.kroupier.bench.connect;

import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;

/**
 * One journaling task: each {@link #poll} waits until the next beat is due, appends
 * {@code <unix_ms> <worker-id> 0} to its journal and returns no records. Each line is one write
 * to a file opened for appending, as kroupier's journal writer does, so lines of two workers
 * never interleave. Connect hands a task no group generation; the journal says 0.
 */
public class JournalSourceTask extends SourceTask {
    private final Object wake = new Object();
    private volatile boolean stopping;
    private FileOutputStream out;
    private String worker;
    private long beatMs;
    private long nextBeat;

    @Override
    public String version() {
        return "1";
    }

    @Override
    public void start(Map<String, String> props) {
        worker = System.getProperty("kroupier.bench.worker");
        if (worker == null || worker.isEmpty() || worker.chars().anyMatch(Character::isWhitespace)) {
            throw new ConnectException("start the worker JVM with -Dkroupier.bench.worker=ID "
                    + "(no whitespace): the journal names the worker that ran each task");
        }
        var config = JournalSourceConnector.CONFIG.parse(props);
        beatMs = (Long) config.get(JournalSourceConnector.BEAT_MS);
        String index = props.get(JournalSourceConnector.TASK_INDEX);
        if (index == null) {
            throw new ConnectException("no " + JournalSourceConnector.TASK_INDEX + " in the task config");
        }
        Path dir = Path.of((String) config.get(JournalSourceConnector.JOURNAL_DIR));
        try {
            Files.createDirectories(dir);
            out = new FileOutputStream(dir.resolve("task-" + index + ".log").toFile(), true);
        } catch (IOException e) {
            throw new ConnectException("cannot open the journal in " + dir + ": " + e, e);
        }
        nextBeat = System.currentTimeMillis();
    }

    @Override
    public List<SourceRecord> poll() throws InterruptedException {
        synchronized (wake) {
            long now = System.currentTimeMillis();
            while (!stopping && now < nextBeat) {
                wake.wait(nextBeat - now);
                now = System.currentTimeMillis();
            }
            if (stopping) {
                return null;
            }
            byte[] line = (now + " " + worker + " 0\n").getBytes(StandardCharsets.US_ASCII);
            try {
                out.write(line);
            } catch (IOException e) {
                throw new ConnectException("cannot append to the journal: " + e, e);
            }
            // The next beat one period after this one, as kroupier's beat task does (no catch-up).
            nextBeat = now + beatMs;
        }
        return null;
    }

    @Override
    public void stop() {
        stopping = true;
        synchronized (wake) {
            wake.notifyAll();
            if (out != null) {
                try {
                    out.close();
                } catch (IOException e) {
                    // The task is stopping; a failed close loses nothing already written.
                }
            }
        }
    }
}
