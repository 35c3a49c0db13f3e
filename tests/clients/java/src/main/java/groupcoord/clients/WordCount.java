package groupcoord.clients;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * The Kafka Streams word count, unchanged but for test settings:
 * {@code WordCount BOOTSTRAP INPUT OUTPUT APPLICATION_ID INSTANCE_ID STATE_DIR [PROCESSING_GUARANTEE]}
 * (the guarantee defaults to at_least_once; exactly_once_v2 runs every task in transactions). Lines of INPUT are split
 * into lowercase words, regrouped by word (a repartition topic), counted in a persistent store (a changelog
 * topic, with one standby replica) and every new count goes to OUTPUT (word -> count as a long).
 *
 * <p>Prints JSON lines: {@code state} on every KafkaStreams state change, with the active and standby tasks
 * of this instance once RUNNING. Closing stdin closes the application the ordinary way.
 */
public final class WordCount {
    private WordCount() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], input = args[1], output = args[2], applicationId = args[3];
        String instanceId = args[4], stateDir = args[5];
        String guarantee = args.length > 6 ? args[6] : StreamsConfig.AT_LEAST_ONCE;
        Properties config = new Properties();
        config.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        config.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        config.put(StreamsConfig.CLIENT_ID_CONFIG, instanceId);
        config.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        config.put(StreamsConfig.NUM_STANDBY_REPLICAS_CONFIG, 1);
        config.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, guarantee);
        config.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        config.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        config.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);  // every count goes out
        config.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        config.put(StreamsConfig.consumerPrefix(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG), instanceId);
        // Long enough for a restarted instance to come back as the same static member.
        config.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 30000);
        config.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 500);

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
            .flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split("\\W+")))
            .filter((key, word) -> !word.isEmpty())
            .groupBy((key, word) -> word, Grouped.with("words", Serdes.String(), Serdes.String()))
            .count(Materialized.as("counts"))
            .toStream()
            .to(output, Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(builder.build(), config);
        streams.setStateListener((now, before) -> {
            Map<String, Object> line = new LinkedHashMap<>();
            line.put("event", "state");
            line.put("state", now.toString());
            if (now == KafkaStreams.State.RUNNING) {
                TreeSet<String> active = new TreeSet<>(), standby = new TreeSet<>();
                for (ThreadMetadata thread : streams.metadataForLocalThreads()) {
                    thread.activeTasks().forEach(task -> active.add(task.taskId().toString()));
                    thread.standbyTasks().forEach(task -> standby.add(task.taskId().toString()));
                }
                line.put("active", new ArrayList<>(active));
                line.put("standby", new ArrayList<>(standby));
            }
            Json.emit(System.out, line);
        });
        streams.setUncaughtExceptionHandler(failure -> {
            Json.emit(System.out, Map.of("event", "error", "error", failure.getClass().getSimpleName(),
                                         "message", String.valueOf(failure.getMessage())));
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse
                .SHUTDOWN_CLIENT;
        });
        streams.start();
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            while (in.readLine() != null) {
                // only the end of stdin means stop
            }
        }
        streams.close(Duration.ofSeconds(20));
        Json.emit(System.out, Map.of("event", "closed"));
    }
}
