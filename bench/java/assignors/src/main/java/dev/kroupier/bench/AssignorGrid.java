package dev.kroupier.bench;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Supplier;

import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Assignment;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupAssignment;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupSubscription;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;

/**
 * Times one of Kafka's consumer assignors on the grid kroupier's assignors are measured on
 * (`kroupier assign`), and prints one JSON line per cell in the same shape:
 * {@code {"assignor","tasks","workers","scenario","ms","moves","min_moves","max_minus_min"}}.
 *
 * <p>The group: one topic of T partitions (T tasks), W members {@code worker-0000000..}
 * subscribed to it. Scenarios: {@code cold} (nobody owns anything), {@code stable} (members own
 * the assignor's own cold result, nothing changed), {@code join} (one member joins), {@code
 * leave} (the middle member leaves). Previous ownership reaches the assignor the way Kafka's
 * consumer passes it: the cooperative protocol sends owned partitions and the generation in
 * the subscription; the eager protocol revokes everything before it joins, so StickyAssignor
 * learns the previous assignment from its user data (written by the member's own assignor after
 * {@code onAssignment}). Only {@code assign(Cluster, GroupSubscription)} is timed, the call the
 * group leader makes; when a cooperative round revokes partitions, the follow-up rounds run too
 * and their times are summed (as `kroupier assign` sums its cooperative rounds). The JIT is warmed
 * up on every cell before the measured runs; the median of the measured runs is reported.
 */
public final class AssignorGrid {
    private static final String TOPIC = "tasks";
    private static final int MAX_ROUNDS = 4;

    private AssignorGrid() {}

    /** Which Kafka assignor, and how its members carry ownership into the next round. */
    enum Kind {
        COOPERATIVE_STICKY("cooperative-sticky", CooperativeStickyAssignor::new, true),
        STICKY("sticky", StickyAssignor::new, false),
        ROUND_ROBIN("round-robin", RoundRobinAssignor::new, false);

        final String name;
        final Supplier<ConsumerPartitionAssignor> make;
        final boolean cooperative;

        Kind(String name, Supplier<ConsumerPartitionAssignor> make, boolean cooperative) {
            this.name = name;
            this.make = make;
            this.cooperative = cooperative;
        }

        static Kind parse(String name) {
            for (Kind k : values()) {
                if (k.name.equals(name)) {
                    return k;
                }
            }
            throw new IllegalArgumentException(
                "unknown assignor " + name + " (cooperative-sticky, sticky, round-robin)");
        }
    }

    /** Command-line settings. */
    static final class Settings {
        Kind kind;
        int[] tasks = {10_000};
        int[] workers = {10};
        String[] scenarios = {"cold", "stable", "join", "leave"};
        int runs = 5;
        int warmup = 3;
        long warmupMs = 1_000;
        long maxRoundMs = 60_000;
        String version = "";
    }

    public static void main(String[] args) {
        Settings s;
        try {
            s = parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("assignor-bench: " + e.getMessage());
            System.err.println(
                "usage: AssignorGrid --assignor cooperative-sticky|sticky|round-robin"
                    + " [--tasks 10000,100000] [--workers 10,100] [--scenarios cold,stable,join,leave]"
                    + " [--runs 5] [--warmup 3] [--warmup-ms 1000] [--max-round-ms 60000]");
            System.exit(2);
            return;
        }
        for (int t : s.tasks) {
            Cluster cluster = cluster(t);
            for (int w : s.workers) {
                for (String scenario : s.scenarios) {
                    System.out.println(cell(s, cluster, t, w, scenario));
                    System.out.flush();
                }
            }
        }
    }

    static Settings parse(String[] args) {
        Settings s = new Settings();
        for (int i = 0; i < args.length; i += 2) {
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException(args[i] + " needs a value");
            }
            String v = args[i + 1];
            try {
                switch (args[i]) {
                    case "--assignor" -> s.kind = Kind.parse(v);
                    case "--tasks" -> s.tasks = ints(v, 1);
                    case "--workers" -> s.workers = ints(v, 1);
                    case "--scenarios" -> s.scenarios = scenarios(v);
                    case "--runs" -> s.runs = ints(v, 1)[0];
                    case "--warmup" -> s.warmup = ints(v, 0)[0];
                    case "--warmup-ms" -> s.warmupMs = ints(v, 0)[0];
                    case "--max-round-ms" -> s.maxRoundMs = ints(v, 1)[0];
                    default -> throw new IllegalArgumentException("unknown option " + args[i]);
                }
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(args[i] + ": not a number list: " + v);
            }
        }
        if (s.kind == null) {
            throw new IllegalArgumentException("--assignor is required");
        }
        return s;
    }

    private static int[] ints(String list, int min) {
        int[] out = Arrays.stream(list.split(",")).mapToInt(Integer::parseInt).toArray();
        for (int x : out) {
            if (x < min) {
                throw new IllegalArgumentException("values must be at least " + min + ": " + list);
            }
        }
        return out;
    }

    private static String[] scenarios(String list) {
        String[] out = list.split(",");
        for (String x : out) {
            if (!List.of("cold", "stable", "join", "leave").contains(x)) {
                throw new IllegalArgumentException("unknown scenario " + x);
            }
        }
        return out;
    }

    /** One topic of {@code t} partitions on one broker without a rack. */
    static Cluster cluster(int t) {
        Node node = new Node(0, "localhost", 9092);
        Node[] replicas = {node};
        List<PartitionInfo> partitions = new ArrayList<>(t);
        for (int p = 0; p < t; p++) {
            partitions.add(new PartitionInfo(TOPIC, p, node, replicas, replicas));
        }
        return new Cluster("bench", List.of(node), partitions, Set.of(), Set.of());
    }

    static String memberId(int i) {
        return String.format("worker-%07d", i);
    }

    /** Measures one cell and returns its JSON line. */
    static String cell(Settings s, Cluster cluster, int t, int w, String scenario) {
        ConsumerPartitionAssignor leader = s.kind.make.get();
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < w; i++) {
            ids.add(memberId(i));
        }
        // Previous owner of each partition as an index into `everyone` (-1: nobody).
        List<String> everyone = new ArrayList<>(ids);
        int[] previousOwner = new int[t];
        Arrays.fill(previousOwner, -1);
        Map<String, Subscription> subscriptions = new LinkedHashMap<>();
        if (scenario.equals("cold")) {
            for (String id : ids) {
                subscriptions.put(id, fresh(s.kind));
            }
        } else {
            Map<String, Subscription> cold = new LinkedHashMap<>();
            for (String id : ids) {
                cold.put(id, fresh(s.kind));
            }
            long started = System.nanoTime();
            GroupAssignment base = leader.assign(cluster, new GroupSubscription(cold));
            long baseMs = (System.nanoTime() - started) / 1_000_000;
            if (baseMs > s.maxRoundMs) {
                return skipped(s, t, w, scenario, "the cold round took " + baseMs + " ms (over --max-round-ms)");
            }
            for (int i = 0; i < w; i++) {
                for (TopicPartition tp : base.groupAssignment().get(ids.get(i)).partitions()) {
                    previousOwner[tp.partition()] = i;
                }
            }
            subscriptions = owning(s.kind, base, 1);
            if (scenario.equals("join")) {
                String id = memberId(w);
                everyone.add(id);
                subscriptions.put(id, fresh(s.kind));
            } else if (scenario.equals("leave")) {
                subscriptions.remove(ids.get(w / 2));
            }
        }
        Map<String, Integer> index = new HashMap<>();
        for (int i = 0; i < everyone.size(); i++) {
            index.put(everyone.get(i), i);
        }

        // Warm up: at least --warmup rounds and --warmup-ms of them (small cells need many).
        long warmStarted = System.nanoTime();
        Result last = null;
        for (int i = 0; i < s.warmup || (System.nanoTime() - warmStarted) / 1_000_000 < s.warmupMs; i++) {
            last = rounds(s.kind, leader, cluster, subscriptions);
            if (i == 0 && last.nanos / 1_000_000 > s.maxRoundMs) {
                return skipped(s, t, w, scenario, "one measurement took " + last.nanos / 1_000_000 + " ms (over --max-round-ms)");
            }
            if (i >= 1000) {
                break;
            }
        }
        long[] times = new long[s.runs];
        for (int r = 0; r < s.runs; r++) {
            System.gc();
            last = rounds(s.kind, leader, cluster, subscriptions);
            times[r] = last.nanos;
        }
        Arrays.sort(times);
        double ms = Math.round(times[times.length / 2] / 1e3) / 1e3;

        int[] finalOwner = new int[t];
        Arrays.fill(finalOwner, -1);
        int max = 0;
        int min = Integer.MAX_VALUE;
        for (Map.Entry<String, Assignment> e : last.assignment.groupAssignment().entrySet()) {
            int owner = index.get(e.getKey());
            List<TopicPartition> parts = e.getValue().partitions();
            max = Math.max(max, parts.size());
            min = Math.min(min, parts.size());
            for (TopicPartition tp : parts) {
                finalOwner[tp.partition()] = owner;
            }
        }
        long moves = 0;
        for (int p = 0; p < t; p++) {
            if (previousOwner[p] >= 0 && finalOwner[p] >= 0 && finalOwner[p] != previousOwner[p]) {
                moves++;
            }
        }
        long minMoves = lowerBoundMoves(previousOwner, subscriptions.keySet(), index, t);
        return String.format(
            "{\"assignor\":\"%s\",\"tasks\":%d,\"workers\":%d,\"scenario\":\"%s\",\"ms\":%s,"
                + "\"moves\":%d,\"min_moves\":%d,\"max_minus_min\":%d,\"runs\":%d}",
            s.kind.name, t, w, scenario, ms, moves, minMoves, max - min, s.runs);
    }

    private static String skipped(Settings s, int t, int w, String scenario, String why) {
        return String.format(
            "{\"assignor\":\"%s\",\"tasks\":%d,\"workers\":%d,\"scenario\":\"%s\",\"skipped\":\"%s\"}",
            s.kind.name, t, w, scenario, why);
    }

    /**
     * The fewest moves a balanced plan needs (as kroupier's {@code check::lower_bound_moves}):
     * partitions of departed owners, plus what members hold above their share.
     */
    static long lowerBoundMoves(int[] previousOwner, Set<String> members, Map<String, Integer> index, int t) {
        int[] count = new int[index.size()];
        boolean[] present = new boolean[index.size()];
        for (String m : members) {
            present[index.get(m)] = true;
        }
        long bound = 0;
        for (int owner : previousOwner) {
            if (owner < 0) {
                continue;
            }
            if (present[owner]) {
                count[owner]++;
            } else {
                bound++;
            }
        }
        int n = members.size();
        int floor = t / n;
        int extra = t % n;
        long surplus = 0;
        int above = 0;
        for (int i = 0; i < count.length; i++) {
            if (present[i] && count[i] > floor) {
                surplus += count[i] - floor;
                above++;
            }
        }
        return bound + surplus - Math.min(extra, above);
    }

    /** A member that owns nothing yet: what a consumer sends on its first join. */
    static Subscription fresh(Kind kind) {
        ConsumerPartitionAssignor own = kind.make.get();
        ByteBuffer userData = own.subscriptionUserData(Set.of(TOPIC));
        return new Subscription(List.of(TOPIC), userData, Collections.emptyList(), -1, Optional.empty());
    }

    /**
     * What each member sends after it was given {@code result} in {@code generation}: its own
     * assignor instance learns the assignment through {@code onAssignment} and writes its user
     * data; cooperative members list their owned partitions, eager members revoked them first.
     */
    static Map<String, Subscription> owning(Kind kind, GroupAssignment result, int generation) {
        Map<String, Subscription> out = new LinkedHashMap<>();
        for (Map.Entry<String, Assignment> e : result.groupAssignment().entrySet()) {
            ConsumerPartitionAssignor own = kind.make.get();
            own.onAssignment(e.getValue(), new ConsumerGroupMetadata("bench", generation, e.getKey(), Optional.empty()));
            ByteBuffer userData = own.subscriptionUserData(Set.of(TOPIC));
            List<TopicPartition> owned = kind.cooperative ? e.getValue().partitions() : Collections.emptyList();
            out.put(e.getKey(), new Subscription(List.of(TOPIC), userData, owned, generation, Optional.empty()));
        }
        return out;
    }

    /** The last round's assignment and the summed time of the timed assign calls. */
    record Result(GroupAssignment assignment, long nanos) {}

    /**
     * Runs the leader's assign call and, for the cooperative protocol, the follow-up rounds while
     * a round revokes partitions (members that lose partitions rejoin at once).
     */
    static Result rounds(Kind kind, ConsumerPartitionAssignor leader, Cluster cluster, Map<String, Subscription> first) {
        Map<String, Subscription> subscriptions = rewind(first);
        long nanos = 0;
        GroupAssignment result = null;
        for (int round = 1; round <= MAX_ROUNDS; round++) {
            GroupSubscription group = new GroupSubscription(subscriptions);
            long started = System.nanoTime();
            result = leader.assign(cluster, group);
            nanos += System.nanoTime() - started;
            if (!kind.cooperative || !revokes(subscriptions, result)) {
                break;
            }
            int generation = subscriptions.values().stream()
                .mapToInt(sub -> sub.generationId().orElse(-1)).max().orElse(0) + 1;
            subscriptions = owning(kind, result, generation);
        }
        return new Result(result, nanos);
    }

    /** Fresh buffers over the same user data, so every run decodes it from the start. */
    private static Map<String, Subscription> rewind(Map<String, Subscription> subs) {
        Map<String, Subscription> out = new LinkedHashMap<>();
        for (Map.Entry<String, Subscription> e : subs.entrySet()) {
            Subscription s = e.getValue();
            ByteBuffer data = s.userData() == null ? null : s.userData().duplicate();
            out.put(e.getKey(), new Subscription(s.topics(), data, s.ownedPartitions(), s.generationId().orElse(-1), s.rackId()));
        }
        return out;
    }

    /** Whether some member lost a partition it owned (so it rejoins for another round). */
    private static boolean revokes(Map<String, Subscription> subscriptions, GroupAssignment result) {
        for (Map.Entry<String, Subscription> e : subscriptions.entrySet()) {
            List<TopicPartition> owned = e.getValue().ownedPartitions();
            if (owned.isEmpty()) {
                continue;
            }
            Set<TopicPartition> now = new java.util.HashSet<>(result.groupAssignment().get(e.getKey()).partitions());
            for (TopicPartition tp : owned) {
                if (!now.contains(tp)) {
                    return true;
                }
            }
        }
        return false;
    }
}
