package dev.kroupier.interop;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * A KafkaConsumer in a consumer group, printing what it owns.
 *
 * <pre>
 * ConsumerInterop --bootstrap B --group G --id ID --topic T --assignor range|cooperative-sticky
 *                 [--session-timeout-ms MS] [--heartbeat-interval-ms MS]
 *                 [--group-protocol classic|consumer]
 * </pre>
 *
 * <p>With {@code --group-protocol consumer} (KIP-848) the broker assigns: {@code --assignor}
 * names its server-side assignor ({@code uniform} or {@code range}), and the session and
 * heartbeat are the broker's (the client may not set them).
 *
 * <p>After each rebalance callback (assigned, revoked, lost) it prints one JSON line, as
 * kroupier's consumer_group example does: {@code {"ts_ms":..,"id":..,"generation":..,"partitions":[..]}},
 * the partitions of T it owns after the callback. On SIGTERM it closes the consumer (which
 * revokes its partitions and leaves the group), prints a last line with generation -1 and no
 * partitions, and exits 0. The client id is ID.
 */
public final class ConsumerInterop {
  private ConsumerInterop() {}

  private static final TreeSet<Integer> OWNED = new TreeSet<>();

  private static void print(String id, int generation) {
    StringBuilder line = new StringBuilder();
    line.append("{\"ts_ms\":").append(System.currentTimeMillis());
    line.append(",\"id\":\"").append(id).append('"');
    line.append(",\"generation\":").append(generation);
    line.append(",\"partitions\":[");
    String sep = "";
    for (int p : OWNED) {
      line.append(sep).append(p);
      sep = ",";
    }
    line.append("]}");
    synchronized (System.out) {
      System.out.println(line);
      System.out.flush();
    }
  }

  public static void main(String[] argv) throws Exception {
    Map<String, String> args = new HashMap<>();
    for (int i = 0; i + 1 < argv.length; i += 2) {
      if (!argv[i].startsWith("--")) {
        System.err.println("ConsumerInterop: expected --name value pairs, got " + argv[i]);
        System.exit(2);
      }
      args.put(argv[i].substring(2), argv[i + 1]);
    }
    for (String required : List.of("bootstrap", "group", "id", "topic", "assignor")) {
      if (!args.containsKey(required)) {
        System.err.println("ConsumerInterop: --" + required + " is required");
        System.exit(2);
      }
    }
    String id = args.get("id");
    String topic = args.get("topic");
    boolean kip848 = "consumer".equals(args.getOrDefault("group-protocol", "classic"));
    String assignor =
        kip848 ? null : switch (args.get("assignor")) {
          case "range" -> RangeAssignor.class.getName();
          case "cooperative-sticky" -> CooperativeStickyAssignor.class.getName();
          default -> {
            System.err.println("ConsumerInterop: --assignor takes range or cooperative-sticky");
            System.exit(2);
            yield null;
          }
        };

    Properties props = new Properties();
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args.get("bootstrap"));
    props.put(ConsumerConfig.GROUP_ID_CONFIG, args.get("group"));
    props.put(ConsumerConfig.CLIENT_ID_CONFIG, id);
    if (kip848) {
      props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
      props.put(ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, args.get("assignor"));
    } else {
      props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
      props.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, assignor);
      props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, args.getOrDefault("session-timeout-ms", "6000"));
      props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, args.getOrDefault("heartbeat-interval-ms", "500"));
    }
    // The rebalance timeout: how long the group waits for a member to rejoin.
    props.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, "30000");
    props.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, "3000");
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());

    KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props);
    CountDownLatch done = new CountDownLatch(1);
    AtomicInteger exitCode = new AtomicInteger(0);
    Thread main = Thread.currentThread();
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  consumer.wakeup();
                  try {
                    done.await();
                  } catch (InterruptedException e) {
                    main.interrupt();
                  }
                  // A JVM ended by SIGTERM exits 143 even after a clean close; this one left
                  // its group as asked, so it exits 0 (1 after an error), as kroupier's
                  // binaries do.
                  Runtime.getRuntime().halt(exitCode.get());
                }));

    ConsumerRebalanceListener listener =
        new ConsumerRebalanceListener() {
          private int generation() {
            return consumer.groupMetadata().generationId();
          }

          private List<Integer> of(Collection<TopicPartition> partitions) {
            List<Integer> out = new ArrayList<>();
            for (TopicPartition tp : partitions) {
              if (tp.topic().equals(topic)) {
                out.add(tp.partition());
              }
            }
            return out;
          }

          @Override
          public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            OWNED.removeAll(of(partitions));
            print(id, generation());
          }

          @Override
          public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            OWNED.addAll(of(partitions));
            print(id, generation());
          }

          @Override
          public void onPartitionsLost(Collection<TopicPartition> partitions) {
            OWNED.removeAll(of(partitions));
            print(id, -1);
          }
        };

    try {
      consumer.subscribe(List.of(topic), listener);
      while (true) {
        consumer.poll(Duration.ofMillis(100));
      }
    } catch (WakeupException e) {
      // SIGTERM: close below.
    } catch (RuntimeException e) {
      e.printStackTrace();
      exitCode.set(1);
    } finally {
      consumer.close(Duration.ofSeconds(10));
      OWNED.clear();
      print(id, -1);
      done.countDown();
    }
  }
}
