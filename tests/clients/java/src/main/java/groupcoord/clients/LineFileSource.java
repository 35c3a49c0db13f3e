package groupcoord.clients;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.source.SourceConnector;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;

/**
 * A Kafka Connect source connector reading the lines of one file into a topic, one record a line, its source
 * offset the number of lines read. Connect's own FileStreamSourceConnector cannot run here: connect-file 4.3.1
 * (the newest this machine's Maven Central serves) calls org.apache.kafka.common.utils.AppInfoParser, which
 * kafka-clients 4.4.0 moved to ...utils.internals, so its version() throws NoClassDefFoundError.
 * Config: {@code file}, {@code topic}.
 */
public final class LineFileSource extends SourceConnector {
    private Map<String, String> config;

    @Override
    public void start(Map<String, String> props) {
        config = Map.copyOf(props);
    }

    @Override
    public Class<? extends org.apache.kafka.connect.connector.Task> taskClass() {
        return Task.class;
    }

    @Override
    public List<Map<String, String>> taskConfigs(int maxTasks) {
        return List.of(config);  // one file, one task
    }

    @Override
    public void stop() {}

    @Override
    public ConfigDef config() {
        return new ConfigDef()
            .define("file", ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "the file whose lines are read")
            .define("topic", ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "the topic the lines go to");
    }

    @Override
    public String version() {
        return "1";
    }

    /** Reads the lines after the last committed offset, at most 100 a poll. */
    public static final class Task extends SourceTask {
        private Path file;
        private String topic;
        private Map<String, String> partition;
        private long linesRead;

        @Override
        public String version() {
            return "1";
        }

        @Override
        public void start(Map<String, String> props) {
            file = Path.of(props.get("file"));
            topic = props.get("topic");
            partition = Map.of("file", file.toString());
            Map<String, Object> committed = context.offsetStorageReader().offset(partition);
            linesRead = committed == null ? 0 : ((Number) committed.get("lines")).longValue();
        }

        @Override
        public List<SourceRecord> poll() throws InterruptedException {
            List<String> lines;
            try {
                lines = Files.readAllLines(file, StandardCharsets.UTF_8);
            } catch (NoSuchFileException missing) {
                lines = Collections.emptyList();
            } catch (IOException failed) {
                throw new org.apache.kafka.connect.errors.ConnectException(failed);
            }
            List<SourceRecord> records = new ArrayList<>();
            while (linesRead < lines.size() && records.size() < 100) {
                String line = lines.get((int) linesRead);
                linesRead++;
                records.add(new SourceRecord(partition, Map.of("lines", linesRead), topic, null,
                                             Schema.STRING_SCHEMA, line));
            }
            if (records.isEmpty()) {
                Thread.sleep(100);
                return null;
            }
            return records;
        }

        @Override
        public void stop() {}
    }
}
