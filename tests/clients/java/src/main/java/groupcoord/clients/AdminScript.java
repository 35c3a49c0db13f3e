package groupcoord.clients;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.MemberToRemove;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RemoveMembersFromConsumerGroupOptions;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Kafka's Java AdminClient (and a producer) driven line by line from pytest: {@code AdminScript BOOTSTRAP},
 * then one command a line on stdin, answered by one JSON line on stdout: {"op": ..., "result": ...} or
 * {"op": ..., "error": "GroupNotEmptyException", "message": ...}. One JVM serves a whole scripted history.
 *
 * <p>Commands (whitespace separated): createTopic TOPIC PARTITIONS; produce TOPIC COUNT_OF_PARTITION_0,COUNT_OF_PARTITION_1,...;
 * produceLine TOPIC TIMES WORDS... (the line of WORDS, TIMES times, spread over the partitions);
 * endOffsets TOPIC PARTITIONS; listGroups [TYPE ...]; describeGroups GROUP ...; listOffsets GROUP;
 * alterOffsets GROUP TOPIC P:O[,P:O...]; deleteOffsets GROUP TOPIC P[,P...];
 * removeMembers GROUP [INSTANCE_ID ...] (none: every member); deleteGroups GROUP ...; describeCluster;
 * describeTopicConfig TOPIC; setGroupConfig GROUP KEY=VALUE ...; deleteGroupConfig GROUP KEY ...; describeGroupConfig GROUP.
 */
public final class AdminScript {
    private static final long TIMEOUT_S = 20;

    private AdminScript() {}

    public static void main(String[] args) throws Exception {
        Properties config = new Properties();
        config.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        config.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
        config.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
        try (Admin admin = Admin.create(config);
             BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                String[] words = line.trim().split("\\s+");
                if (words[0].isEmpty()) continue;
                Map<String, Object> answer = new LinkedHashMap<>();
                answer.put("op", words[0]);
                try {
                    answer.put("result", run(admin, args[0], words[0], Arrays.copyOfRange(words, 1, words.length)));
                } catch (ExecutionException failed) {
                    answer.put("error", failed.getCause().getClass().getSimpleName());
                    answer.put("message", String.valueOf(failed.getCause().getMessage()));
                } catch (Exception failed) {
                    answer.put("error", failed.getClass().getSimpleName());
                    answer.put("message", String.valueOf(failed.getMessage()));
                }
                Json.emit(System.out, answer);
            }
        }
    }

    private static Object run(Admin admin, String bootstrap, String op, String[] a) throws Exception {
        switch (op) {
            case "createTopic" -> {
                admin.createTopics(List.of(new NewTopic(a[0], Integer.parseInt(a[1]), (short) 1)))
                     .all().get(TIMEOUT_S, TimeUnit.SECONDS);
                return a[0];
            }
            case "produce" -> {
                return produce(bootstrap, a[0], Arrays.stream(a[1].split(",")).mapToInt(Integer::parseInt).toArray());
            }
            case "produceLine" -> {
                return produceLine(bootstrap, a[0], Integer.parseInt(a[1]), String.join(" ", Arrays.copyOfRange(a, 2, a.length)));
            }
            case "endOffsets" -> {
                Map<TopicPartition, OffsetSpec> latest = new LinkedHashMap<>();
                for (int p = 0; p < Integer.parseInt(a[1]); p++) latest.put(new TopicPartition(a[0], p), OffsetSpec.latest());
                Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> ends =
                    admin.listOffsets(latest).all().get(TIMEOUT_S, TimeUnit.SECONDS);
                Map<Integer, Long> out = new TreeMap<>();
                ends.forEach((tp, info) -> out.put(tp.partition(), info.offset()));
                return out;
            }
            case "listGroups" -> {
                ListGroupsOptions options = new ListGroupsOptions();
                if (a.length > 0) {
                    options.withTypes(Arrays.stream(a).map(GroupType::parse).collect(Collectors.toSet()));
                }
                List<Map<String, Object>> out = new ArrayList<>();
                for (GroupListing g : admin.listGroups(options).all().get(TIMEOUT_S, TimeUnit.SECONDS)) {
                    Map<String, Object> row = new LinkedHashMap<>();
                    row.put("groupId", g.groupId());
                    row.put("type", g.type().map(GroupType::toString));
                    row.put("protocol", g.protocol());
                    row.put("state", g.groupState().map(Object::toString));
                    out.add(row);
                }
                out.sort((x, y) -> ((String) x.get("groupId")).compareTo((String) y.get("groupId")));
                return out;
            }
            case "describeGroups" -> {
                Map<String, ConsumerGroupDescription> groups =
                    admin.describeConsumerGroups(List.of(a)).all().get(TIMEOUT_S, TimeUnit.SECONDS);
                Map<String, Object> out = new LinkedHashMap<>();
                for (String id : a) out.put(id, describe(groups.get(id)));
                return out;
            }
            case "listOffsets" -> {
                Map<TopicPartition, OffsetAndMetadata> offsets =
                    admin.listConsumerGroupOffsets(a[0]).partitionsToOffsetAndMetadata().get(TIMEOUT_S, TimeUnit.SECONDS);
                Map<String, Object> out = new TreeMap<>();
                offsets.forEach((tp, o) -> out.put(tp.toString(), o == null ? null : o.offset()));
                return out;
            }
            case "alterOffsets" -> {
                Map<TopicPartition, OffsetAndMetadata> offsets = new LinkedHashMap<>();
                for (String pair : a[2].split(",")) {
                    String[] po = pair.split(":");
                    offsets.put(new TopicPartition(a[1], Integer.parseInt(po[0])), new OffsetAndMetadata(Long.parseLong(po[1])));
                }
                admin.alterConsumerGroupOffsets(a[0], offsets).all().get(TIMEOUT_S, TimeUnit.SECONDS);
                return "ok";
            }
            case "deleteOffsets" -> {
                Set<TopicPartition> partitions = Arrays.stream(a[2].split(","))
                    .map(p -> new TopicPartition(a[1], Integer.parseInt(p))).collect(Collectors.toSet());
                admin.deleteConsumerGroupOffsets(a[0], partitions).all().get(TIMEOUT_S, TimeUnit.SECONDS);
                return "ok";
            }
            case "removeMembers" -> {
                RemoveMembersFromConsumerGroupOptions options = a.length == 1
                    ? new RemoveMembersFromConsumerGroupOptions()
                    : new RemoveMembersFromConsumerGroupOptions(Arrays.stream(a).skip(1).map(MemberToRemove::new).toList());
                admin.removeMembersFromConsumerGroup(a[0], options).all().get(TIMEOUT_S, TimeUnit.SECONDS);
                return "ok";
            }
            case "deleteGroups" -> {
                admin.deleteConsumerGroups(List.of(a)).all().get(TIMEOUT_S, TimeUnit.SECONDS);
                return "ok";
            }
            case "describeCluster" -> {
                DescribeClusterResult cluster = admin.describeCluster();
                Map<String, Object> out = new LinkedHashMap<>();
                out.put("clusterId", cluster.clusterId().get(TIMEOUT_S, TimeUnit.SECONDS));
                out.put("controller", node(cluster.controller().get(TIMEOUT_S, TimeUnit.SECONDS)));
                out.put("nodes", cluster.nodes().get(TIMEOUT_S, TimeUnit.SECONDS).stream().map(AdminScript::node).toList());
                return out;
            }
            case "setGroupConfig", "deleteGroupConfig" -> {
                ConfigResource group = new ConfigResource(ConfigResource.Type.GROUP, a[0]);
                List<AlterConfigOp> ops = new ArrayList<>();
                for (String item : Arrays.copyOfRange(a, 1, a.length)) {
                    String[] kv = item.split("=", 2);
                    ops.add(op.equals("setGroupConfig")
                        ? new AlterConfigOp(new ConfigEntry(kv[0], kv[1]), AlterConfigOp.OpType.SET)
                        : new AlterConfigOp(new ConfigEntry(kv[0], null), AlterConfigOp.OpType.DELETE));
                }
                admin.incrementalAlterConfigs(Map.of(group, ops)).all().get(TIMEOUT_S, TimeUnit.SECONDS);
                return "ok";
            }
            case "describeTopicConfig" -> {
                ConfigResource topic = new ConfigResource(ConfigResource.Type.TOPIC, a[0]);
                Config described = admin.describeConfigs(List.of(topic)).all().get(TIMEOUT_S, TimeUnit.SECONDS).get(topic);
                Map<String, Object> out = new TreeMap<>();
                for (ConfigEntry entry : described.entries()) out.put(entry.name(), entry.value());
                return out;
            }
            case "describeGroupConfig" -> {
                ConfigResource group = new ConfigResource(ConfigResource.Type.GROUP, a[0]);
                Config described = admin.describeConfigs(List.of(group)).all().get(TIMEOUT_S, TimeUnit.SECONDS).get(group);
                Map<String, Object> out = new TreeMap<>();
                for (ConfigEntry entry : described.entries()) {
                    Map<String, Object> row = new LinkedHashMap<>();
                    row.put("value", entry.value());
                    row.put("source", entry.source().toString());
                    row.put("readOnly", entry.isReadOnly());
                    row.put("sensitive", entry.isSensitive());
                    out.put(entry.name(), row);
                }
                return out;
            }
            default -> throw new IllegalArgumentException("unknown command " + op);
        }
    }

    private static Map<String, Object> describe(ConsumerGroupDescription group) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("groupId", group.groupId());
        out.put("type", group.type().toString());
        out.put("state", group.groupState().toString());
        out.put("assignor", group.partitionAssignor());
        out.put("simple", group.isSimpleConsumerGroup());
        out.put("coordinator", node(group.coordinator()));
        out.put("groupEpoch", group.groupEpoch());
        out.put("targetAssignmentEpoch", group.targetAssignmentEpoch());
        List<Map<String, Object>> members = new ArrayList<>();
        for (MemberDescription m : group.members()) {
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("memberId", m.consumerId());
            row.put("instanceId", m.groupInstanceId());
            row.put("clientId", m.clientId());
            row.put("host", m.host());
            row.put("partitions", partitions(m.assignment().topicPartitions()));
            row.put("target", m.targetAssignment().map(t -> partitions(t.topicPartitions())));
            row.put("memberEpoch", m.memberEpoch());
            row.put("upgraded", m.upgraded());
            members.add(row);
        }
        members.sort((x, y) -> ((String) x.get("clientId")).compareTo((String) y.get("clientId")));
        out.put("members", members);
        return out;
    }

    private static List<String> partitions(Set<TopicPartition> partitions) {
        return partitions.stream().map(TopicPartition::toString).sorted().toList();
    }

    private static Map<String, Object> node(Node node) {
        if (node == null) return null;
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("id", node.id());
        out.put("host", node.host());
        out.put("port", node.port());
        return out;
    }

    private static int produceLine(String bootstrap, String topic, int times, String line) throws Exception {
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerConfig(bootstrap))) {
            List<java.util.concurrent.Future<?>> acks = new ArrayList<>();
            for (int i = 0; i < times; i++) acks.add(producer.send(new ProducerRecord<>(topic, Integer.toString(i), line)));
            for (java.util.concurrent.Future<?> ack : acks) ack.get(TIMEOUT_S, TimeUnit.SECONDS);
        }
        return times;
    }

    private static Properties producerConfig(String bootstrap) {
        Properties config = new Properties();
        config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        config.put(ProducerConfig.ACKS_CONFIG, "all");
        config.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        config.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        config.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        return config;
    }

    private static Map<Integer, Integer> produce(String bootstrap, String topic, int[] counts) throws Exception {
        Map<Integer, Integer> sent = new TreeMap<>();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerConfig(bootstrap))) {
            List<java.util.concurrent.Future<?>> acks = new ArrayList<>();
            for (int p = 0; p < counts.length; p++) {
                for (int i = 0; i < counts[p]; i++) {
                    acks.add(producer.send(new ProducerRecord<>(topic, p, null, p + "-" + i)));
                }
                sent.put(p, counts[p]);
            }
            for (java.util.concurrent.Future<?> ack : acks) ack.get(TIMEOUT_S, TimeUnit.SECONDS);
        }
        return sent;
    }
}
