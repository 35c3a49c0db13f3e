package groupcoord.clients;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * A Java consumer committing ever larger offsets, for the cluster's failover tests:
 * {@code Committer BOOTSTRAP TOPIC GROUP EVERY_MS [key=value ...]}. Once partition 0 of TOPIC is
 * assigned it commits offset 1, 2, 3, ... for it, synchronously, one every EVERY_MS, polling between.
 *
 * <p>Prints JSON lines: {@code assigned}/{@code revoked}/{@code lost} with the generation,
 * {@code committed} with each acknowledged offset, {@code commit_error} with the exception of a failed
 * one (the same offset is not retried: the next is larger). Closing stdin closes the consumer.
 */
public final class Committer {
    private Committer() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2];
        long everyMs = Long.parseLong(args[3]);
        Properties config = new Properties();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        config.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        for (int i = 4; i < args.length; i++) {
            String[] pair = args[i].split("=", 2);
            config.put(pair[0], pair[1]);
        }
        AtomicBoolean stop = new AtomicBoolean(false);
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(config);
        Thread stdin = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                while (in.readLine() != null) {
                    // only the end of stdin means stop
                }
            } catch (Exception ignored) {
                // stdin closed under us: stop all the same
            }
            stop.set(true);
            consumer.wakeup();
        }, "stdin");
        stdin.setDaemon(true);
        stdin.start();

        TopicPartition partition = new TopicPartition(topic, 0);
        AtomicBoolean owned = new AtomicBoolean(false);
        consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                change("revoked", partitions);
            }

            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                change("assigned", partitions);
            }

            @Override
            public void onPartitionsLost(Collection<TopicPartition> partitions) {
                change("lost", partitions);
            }

            private void change(String event, Collection<TopicPartition> partitions) {
                if (partitions.contains(partition)) owned.set(event.equals("assigned"));
                Map<String, Object> line = new LinkedHashMap<>();
                line.put("event", event);
                line.put("partitions", partitions.stream().map(TopicPartition::toString).sorted().toList());
                line.put("generation", consumer.groupMetadata().generationId());
                Json.emit(System.out, line);
            }
        });
        long offset = 0;
        try {
            while (!stop.get()) {
                consumer.poll(Duration.ofMillis(everyMs));
                if (!owned.get()) continue;
                offset++;
                try {
                    consumer.commitSync(Map.of(partition, new OffsetAndMetadata(offset)), Duration.ofSeconds(10));
                    Json.emit(System.out, Map.of("event", "committed", "offset", offset,
                                                 "generation", consumer.groupMetadata().generationId()));
                } catch (WakeupException woken) {
                    break;
                } catch (Exception failed) {
                    Json.emit(System.out, Map.of("event", "commit_error", "offset", offset,
                                                 "error", failed.getClass().getSimpleName()));
                }
            }
        } catch (WakeupException woken) {
            // stdin closed: close below
        } finally {
            consumer.close(Duration.ofSeconds(5));
        }
    }
}
