package groupcoord.clients;

import org.apache.kafka.common.utils.internals.AppInfoParser;

/** Prints the kafka-clients version on the classpath: the smoke test that the Java build is usable. */
public final class Version {
    private Version() {}

    public static void main(String[] args) {
        System.out.println(AppInfoParser.getVersion());
    }
}
