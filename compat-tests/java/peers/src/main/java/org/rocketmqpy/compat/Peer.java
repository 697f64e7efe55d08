package org.rocketmqpy.compat;

import java.io.PrintStream;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Entry point: {@code Peer <command> [--opt value ...]}, and {@code Peer mqadmin ...} (plain text).
 *
 * <p>Every command writes JSON lines (one object per line) through {@link Out}; anything else a
 * library prints goes to stderr because System.out is pointed at stderr before any command runs.
 * A failure prints {@code {"error": "..."}} and exits with a non-zero code.
 */
public final class Peer {

    interface Command {
        void run(Args args) throws Exception;
    }

    private static Map<String, Command> commands() {
        Map<String, Command> m = new LinkedHashMap<>();
        m.put("produce", ProduceCommand::run);
        m.put("produce-busy", ProduceBusyCommand::run);
        m.put("consume", ConsumeCommand::run);
        m.put("consume-orderly", ConsumeOrderlyCommand::run);
        m.put("request", RequestReplyCommands::request);
        m.put("reply", RequestReplyCommands::reply);
        m.put("producer-bench", ProduceBenchCommand::run);
        m.put("remoting-call", RemotingCallCommand::run);
        m.put("codec-service", CodecService::run);
        m.put("codec-bench", CodecBench::run);
        m.put("produce-kinds", ConsumerPeerCommands::produceKinds);
        m.put("produce-bulk", ConsumerPeerCommands::produceBulk);
        m.put("consume-bench", ConsumerPeerCommands::consumeBench);
        m.put("offset-file", ConsumerPeerCommands::offsetFile);
        m.put("consumer-status", ConsumerPeerCommands::consumerStatus);
        m.put("allocate", ConsumerPeerCommands::allocate);
        m.put("dledger-golden", DLedgerGolden::run);
        m.put("dledger-node", DLedgerNode::run);
        return m;
    }

    public static void main(String[] argv) {
        if (argv.length > 0 && "mqadmin".equals(argv[0])) {
            MqAdminCommand.main(argv);
            return;
        }
        Out.init();
        Map<String, Command> commands = commands();
        if (argv.length == 0 || !commands.containsKey(argv[0])) {
            Out.error("usage: Peer <" + String.join("|", commands.keySet()) + "> [--opt value ...]"
                + (argv.length == 0 ? "" : "; unknown command: " + argv[0]));
            System.exit(2);
        }
        int rc = 0;
        try {
            Args args = Args.parse(Arrays.copyOfRange(argv, 1, argv.length));
            commands.get(argv[0]).run(args);
        } catch (Throwable t) {
            t.printStackTrace(System.err);
            Out.error(Out.describe(t));
            rc = 1;
        }
        Out.flush();
        // Client libraries leave non-daemon threads behind; leave right away.
        System.exit(rc);
    }

    private Peer() {
    }

    /** Keeps the real stdout for JSON lines only. */
    static final class Out {
        private static PrintStream json;

        static synchronized void init() {
            if (json == null) {
                json = Util.utf8(System.out);
                System.setOut(System.err);
            }
        }

        static synchronized void emit(Map<String, ?> obj) {
            json.println(Util.toJson(obj));
            json.flush();
        }

        static void error(String message) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("error", message);
            emit(m);
        }

        static synchronized void flush() {
            json.flush();
        }

        static String describe(Throwable t) {
            return t.getClass().getName() + ": " + t.getMessage();
        }
    }
}
