package dev.kroupier.interop;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * Reads partition 0 of a topic from its start with {@code isolation.level=read_committed}, as
 * any Kafka consumer reading a transactional producer's output does, and prints each record's
 * value on one line; exits 0 once it has read up to the end offset it saw when it started.
 *
 * <pre>
 * ReadCommitted --bootstrap B --topic T
 * </pre>
 *
 * <p>No group: the partition is assigned by hand and no offset is committed.
 */
public final class ReadCommitted {
  private ReadCommitted() {}

  public static void main(String[] args) {
    String bootstrap = null;
    String topic = null;
    for (int i = 0; i + 1 < args.length; i += 2) {
      switch (args[i]) {
        case "--bootstrap" -> bootstrap = args[i + 1];
        case "--topic" -> topic = args[i + 1];
        default -> throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    if (bootstrap == null || topic == null) {
      throw new IllegalArgumentException("usage: ReadCommitted --bootstrap B --topic T");
    }
    Properties props = new Properties();
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    TopicPartition partition = new TopicPartition(topic, 0);
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
      consumer.assign(List.of(partition));
      consumer.seekToBeginning(List.of(partition));
      // With read_committed, the end offset is the last stable offset.
      Map<TopicPartition, Long> end = consumer.endOffsets(List.of(partition));
      long stop = end.get(partition);
      StringBuilder out = new StringBuilder();
      while (consumer.position(partition) < stop) {
        for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
          out.append(record.value()).append('\n');
        }
      }
      System.out.print(out);
      System.out.flush();
    }
  }
}
