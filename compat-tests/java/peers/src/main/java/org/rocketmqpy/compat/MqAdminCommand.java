package org.rocketmqpy.compat;

import java.util.Arrays;
import org.apache.rocketmq.tools.command.MQAdminStartup;

/**
 * {@code Peer mqadmin <sub-command> [args...]}: runs the official MQAdminStartup unchanged, then
 * exits at once. Its stdout is the tool's own text (not JSON). Running the tool's main class
 * directly also works, but its JVM then lingers about two seconds in Netty's graceful shutdown.
 */
final class MqAdminCommand {
    private MqAdminCommand() {
    }

    static void main(String[] argv) {
        MQAdminStartup.main0(Arrays.copyOfRange(argv, 1, argv.length), null);
        System.out.flush();
        System.err.flush();
        System.exit(0);
    }
}
