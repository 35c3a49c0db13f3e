package groupcoord.clients;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * One Java consumer in a group, for pytest: {@code Member BOOTSTRAP TOPIC GROUP NAME [key=value ...]}
 * (the key=value pairs are consumer configs, e.g. group.instance.id, partition.assignment.strategy,
 * group.protocol, group.remote.assignor; test.batch.pause.ms=N makes it pause after each batch, a slow consumer;
 * test.subscription.pattern=REGEX subscribes to a server-side pattern, KIP-848, instead of TOPIC).
 *
 * <p>Prints JSON lines: {@code assigned}/{@code revoked}/{@code lost} with the partitions the member owns
 * afterwards and its generation, {@code consumed} with the [partition, offset] pairs of each batch, and
 * {@code committed} with the offsets each synchronous commit stored (after every batch, so a member killed
 * at any time loses nothing committed). Closing stdin closes the consumer the ordinary way.
 */
public final class Member {
    private Member() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2], name = args[3];
        Properties config = new Properties();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        config.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        config.put(ConsumerConfig.CLIENT_ID_CONFIG, name);
        config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        long batchPauseMs = 0;
        String serverPattern = null;
        for (int i = 4; i < args.length; i++) {
            String[] pair = args[i].split("=", 2);
            if (pair[0].equals("test.batch.pause.ms")) {
                batchPauseMs = Long.parseLong(pair[1]);
            } else if (pair[0].equals("test.subscription.pattern")) {
                serverPattern = pair[1];
            } else {
                config.put(pair[0], pair[1]);
            }
        }

        AtomicBoolean stop = new AtomicBoolean(false);
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(config);
        Thread stdin = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                while (in.readLine() != null) {
                    // any line is ignored; only the end of stdin means stop
                }
            } catch (Exception ignored) {
                // stdin closed under us: stop all the same
            }
            stop.set(true);
            consumer.wakeup();
        }, "stdin");
        stdin.setDaemon(true);
        stdin.start();

        TreeSet<Integer> owned = new TreeSet<>();
        TreeSet<String> ownedByTopic = new TreeSet<>();
        ConsumerRebalanceListener listener = new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                change("revoked", partitions, false);
            }

            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                change("assigned", partitions, true);
            }

            @Override
            public void onPartitionsLost(Collection<TopicPartition> partitions) {
                change("lost", partitions, false);
            }

            private void change(String event, Collection<TopicPartition> partitions, boolean add) {
                List<Integer> changed = partitions.stream().map(TopicPartition::partition).sorted().toList();
                List<String> named = partitions.stream().map(TopicPartition::toString).toList();
                if (add) owned.addAll(changed); else owned.removeAll(changed);
                if (add) ownedByTopic.addAll(named); else ownedByTopic.removeAll(named);
                Map<String, Object> line = new LinkedHashMap<>();
                line.put("event", event);
                line.put("changed", changed);
                line.put("partitions", new ArrayList<>(owned));
                line.put("topicPartitions", new ArrayList<>(ownedByTopic));
                line.put("generation", consumer.groupMetadata().generationId());
                line.put("memberId", consumer.groupMetadata().memberId());
                Json.emit(System.out, line);
            }
        };
        if (serverPattern != null) {
            consumer.subscribe(new SubscriptionPattern(serverPattern), listener);  // KIP-848: matched by the server
        } else {
            consumer.subscribe(List.of(topic), listener);
        }

        try {
            while (!stop.get()) {
                ConsumerRecords<byte[], byte[]> records;
                try {
                    records = consumer.poll(Duration.ofMillis(100));
                } catch (WakeupException woken) {
                    break;
                }
                if (records.isEmpty()) continue;
                List<List<Object>> seen = new ArrayList<>();
                Map<TopicPartition, OffsetAndMetadata> next = new LinkedHashMap<>();
                for (ConsumerRecord<byte[], byte[]> record : records) {
                    seen.add(List.of(record.partition(), record.offset()));
                    next.put(new TopicPartition(record.topic(), record.partition()),
                             new OffsetAndMetadata(record.offset() + 1));
                }
                Json.emit(System.out, Map.of("event", "consumed", "records", seen));
                try {
                    consumer.commitSync(next, Duration.ofSeconds(20));
                } catch (WakeupException woken) {
                    break;
                } catch (CommitFailedException | RebalanceInProgressException moved) {
                    // A rebalance took the partitions meanwhile: their next owner consumes them again from
                    // the last commit, so nothing is lost.
                    Json.emit(System.out, Map.of("event", "commit_failed", "error", moved.getClass().getSimpleName()));
                    continue;
                }
                Map<Integer, Long> committed = new LinkedHashMap<>();
                next.forEach((tp, offset) -> committed.put(tp.partition(), offset.offset()));
                Json.emit(System.out, Map.of("event", "committed", "offsets", committed));
                if (batchPauseMs > 0) Thread.sleep(batchPauseMs);
            }
        } catch (Exception failed) {
            Json.emit(System.out, Map.of("event", "error", "error", failed.getClass().getSimpleName(),
                                         "message", String.valueOf(failed.getMessage())));
        } finally {
            consumer.close(Duration.ofSeconds(10));
            Json.emit(System.out, Map.of("event", "closed"));
        }
    }
}
