package dev.kroupier.bench.connect;

import java.util.Map;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.source.ExactlyOnceSupport;

/**
 * The counterpart of kroupier's {@code exactly_once} example for Kafka Connect's exactly-once
 * source support (KIP-618): {@code tasks.max} tasks, task N writing {@code numbers-N <n>} for
 * n = 0, 1, 2, ... to partition 0 of {@code topic}, {@code per.poll} records every
 * {@code every.ms}, with n as its source offset. With the worker's
 * {@code exactly.once.source.support=enabled} each poll's records and their offset are one
 * transaction, as each kroupier commit carries its records and its checkpoint.
 *
 * <p>Config: {@code topic} (required), {@code every.ms} (default 100), {@code per.poll}
 * (default 10).
 */
public class NumbersSourceConnector extends IndexedSourceConnector {
    /** The topic the numbers go to. */
    public static final String TOPIC = "topic";
    /** How often a task returns records, in milliseconds. */
    public static final String EVERY_MS = "every.ms";
    /** How many records one poll returns. */
    public static final String PER_POLL = "per.poll";

    static final ConfigDef CONFIG = new ConfigDef()
            .define(TOPIC, ConfigDef.Type.STRING, ConfigDef.Importance.HIGH,
                    "The topic the numbers go to")
            .define(EVERY_MS, ConfigDef.Type.LONG, 100L, ConfigDef.Range.atLeast(1),
                    ConfigDef.Importance.MEDIUM, "How often a task returns records, in ms")
            .define(PER_POLL, ConfigDef.Type.LONG, 10L, ConfigDef.Range.atLeast(1),
                    ConfigDef.Importance.MEDIUM, "Records per poll");

    @Override
    public Class<? extends Task> taskClass() {
        return NumbersSourceTask.class;
    }

    @Override
    public ExactlyOnceSupport exactlyOnceSupport(Map<String, String> props) {
        return ExactlyOnceSupport.SUPPORTED;
    }

    @Override
    public ConfigDef config() {
        return CONFIG;
    }
}
