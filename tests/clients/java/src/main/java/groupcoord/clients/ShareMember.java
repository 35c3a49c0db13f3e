package groupcoord.clients;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * One Java share consumer (KIP-932) for pytest: {@code ShareMember BOOTSTRAP TOPIC GROUP NAME [key=value ...]}
 * (the pairs are consumer configs; test.mode=explicit|implicit is share.acknowledgement.mode, explicit by default;
 * test.release.mod=N releases, on its first delivery, each record whose offset is 0 mod N; test.reject.mod=M
 * rejects each record whose offset is 1 mod M; the rest are accepted; implicit mode accepts every record, the
 * client acknowledging them itself; test.batch.pause.ms=N pauses after each batch; test.stall.after=K takes one
 * more batch after K and holds it, unacknowledged and typed HELD, until stdin closes or the process is killed).
 *
 * <p>Acknowledges each record (explicit mode) and commits each batch with commitSync. Prints JSON lines: {@code polled} once its
 * first poll returned, {@code delivered} with [partition, offset, deliveryCount, type] per record of a batch,
 * and {@code committed} with the partitions whose acknowledgements the broker confirmed (a record counts as
 * accepted only then) and the failures; {@code warning} for a poll that failed and is retried (the broker
 * restarting). Closing stdin closes the consumer the ordinary way.
 */
public final class ShareMember {
    private ShareMember() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2], name = args[3];
        Properties config = new Properties();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        config.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        config.put(ConsumerConfig.CLIENT_ID_CONFIG, name);
        String mode = "explicit";
        config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        long releaseMod = 0, rejectMod = 0, pauseMs = 0, stallAfter = -1, batches = 0;
        for (int i = 4; i < args.length; i++) {
            String[] pair = args[i].split("=", 2);
            if (pair[0].equals("test.mode")) {
                mode = pair[1];
            } else if (pair[0].equals("test.release.mod")) {
                releaseMod = Long.parseLong(pair[1]);
            } else if (pair[0].equals("test.reject.mod")) {
                rejectMod = Long.parseLong(pair[1]);
            } else if (pair[0].equals("test.stall.after")) {
                stallAfter = Long.parseLong(pair[1]);
            } else if (pair[0].equals("test.batch.pause.ms")) {
                pauseMs = Long.parseLong(pair[1]);
            } else {
                config.put(pair[0], pair[1]);
            }
        }

        config.put("share.acknowledgement.mode", mode);
        boolean explicit = mode.equals("explicit");

        AtomicBoolean stop = new AtomicBoolean(false);
        KafkaShareConsumer<byte[], byte[]> consumer = new KafkaShareConsumer<>(config);
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
        consumer.subscribe(List.of(topic));

        boolean announced = false;
        try {
            while (!stop.get()) {
                ConsumerRecords<byte[], byte[]> records;
                try {
                    records = consumer.poll(Duration.ofMillis(200));
                } catch (WakeupException woken) {
                    break;
                } catch (KafkaException retried) {  // the broker went away meanwhile: poll again
                    Json.emit(System.out, Map.of("event", "warning", "message", retried.toString()));
                    continue;
                }
                if (!announced) {
                    Json.emit(System.out, Map.of("event", "polled"));
                    announced = true;
                }
                if (records.isEmpty()) continue;
                List<List<Object>> seen = new ArrayList<>();
                boolean holding = batches++ == stallAfter;
                for (ConsumerRecord<byte[], byte[]> record : records) {
                    int count = record.deliveryCount().orElse((short) 0);
                    if (holding) {
                        seen.add(List.of(record.partition(), record.offset(), count, "HELD"));
                        continue;
                    }
                    AcknowledgeType type = AcknowledgeType.ACCEPT;
                    if (explicit && releaseMod > 0 && record.offset() % releaseMod == 0 && count == 1) {
                        type = AcknowledgeType.RELEASE;
                    } else if (explicit && rejectMod > 0 && record.offset() % rejectMod == 1) {
                        type = AcknowledgeType.REJECT;
                    }
                    if (explicit) consumer.acknowledge(record, type);  // implicit: commitSync accepts the batch
                    seen.add(List.of(record.partition(), record.offset(), count, type.name()));
                }
                Json.emit(System.out, Map.of("event", "delivered", "records", seen));
                if (holding) {  // neither poll nor commit again: the records stay acquired by this member
                    while (!stop.get()) Thread.sleep(50);
                    break;
                }
                Map<TopicIdPartition, Optional<KafkaException>> results;
                try {
                    results = consumer.commitSync(Duration.ofSeconds(20));
                } catch (WakeupException woken) {
                    break;
                } catch (KafkaException failed) {  // not confirmed: the records may come back
                    Json.emit(System.out, Map.of("event", "committed", "partitions", List.of(),
                                                 "failed", Map.of("all", failed.toString())));
                    continue;
                }
                List<Integer> ok = new ArrayList<>();
                Map<String, String> failed = new LinkedHashMap<>();
                results.forEach((tp, error) -> {
                    if (error.isPresent()) failed.put(String.valueOf(tp.partition()), error.get().toString());
                    else ok.add(tp.partition());
                });
                Json.emit(System.out, Map.of("event", "committed", "partitions", ok, "failed", failed));
                if (pauseMs > 0) Thread.sleep(pauseMs);
            }
        } catch (Exception e) {
            Json.emit(System.out, Map.of("event", "error", "message", e.toString()));
        } finally {
            consumer.close(Duration.ofSeconds(10));
        }
    }
}
