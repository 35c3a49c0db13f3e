package groupcoord.clients;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * A consume-transform-produce exactly-once worker with the Java client, for pytest (the Java twin of
 * tests/clients/eos_worker.py): {@code EosWorker BOOTSTRAP GROUP TRANSACTIONAL_ID INPUT OUTPUT}.
 *
 * <p>Each poll's records become one transaction: "partition:offset" of every input record goes to
 * OUTPUT, the consumer's positions go in with sendOffsetsToTransaction, then commit. An abortable
 * error aborts and rewinds to the group's committed offsets; a fatal one (fenced) exits 3. It pauses
 * inside each transaction, so a SIGKILL of the test tends to land in an open transaction.
 */
public final class EosWorker {
    private static final long IN_TXN_PAUSE_MS = 50;

    private EosWorker() {
    }

    public static void main(String[] args) throws InterruptedException {
        String bootstrap = args[0];
        String group = args[1];
        String transactionalId = args[2];
        String source = args[3];
        String sink = args[4];

        Properties consumerProps = new Properties();
        consumerProps.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        consumerProps.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        consumerProps.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        consumerProps.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        consumerProps.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        consumerProps.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "6000");
        consumerProps.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500");
        consumerProps.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        consumerProps.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());

        Properties producerProps = new Properties();
        producerProps.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        producerProps.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        producerProps.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "30000");
        producerProps.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        producerProps.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());

        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerProps);
             KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerProps)) {
            producer.initTransactions();
            consumer.subscribe(List.of(source));
            while (true) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(500));
                if (records.isEmpty()) {
                    continue;
                }
                try {
                    producer.beginTransaction();
                    for (ConsumerRecord<byte[], byte[]> r : records) {
                        String value = r.partition() + ":" + r.offset();
                        producer.send(new ProducerRecord<>(sink, r.key(), value.getBytes()));
                    }
                    Thread.sleep(IN_TXN_PAUSE_MS);
                    Map<TopicPartition, OffsetAndMetadata> positions = new HashMap<>();
                    for (TopicPartition tp : consumer.assignment()) {
                        positions.put(tp, new OffsetAndMetadata(consumer.position(tp)));
                    }
                    producer.sendOffsetsToTransaction(positions, consumer.groupMetadata());
                    producer.commitTransaction();
                } catch (ProducerFencedException | InvalidProducerEpochException | OutOfOrderSequenceException
                         | AuthorizationException fatal) {
                    System.err.println("fatal: " + fatal);
                    System.exit(3);
                } catch (KafkaException abortable) {
                    System.err.println("aborting: " + abortable);
                    producer.abortTransaction();
                    rewind(consumer);
                }
            }
        }
    }

    /** Back to the group's committed offsets (the start when none), after an aborted transaction. */
    private static void rewind(KafkaConsumer<byte[], byte[]> consumer) {
        Set<TopicPartition> assignment = consumer.assignment();
        Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(assignment);
        for (TopicPartition tp : assignment) {
            OffsetAndMetadata offset = committed.get(tp);
            consumer.seek(tp, offset == null ? 0 : offset.offset());
        }
    }
}
