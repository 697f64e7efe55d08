package org.rocketmqpy.compat;

import ch.qos.logback.classic.Level;
import io.openmessaging.storage.dledger.DLedgerConfig;
import io.openmessaging.storage.dledger.DLedgerLeaderElector;
import io.openmessaging.storage.dledger.DLedgerServer;
import io.openmessaging.storage.dledger.MemberState;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import org.slf4j.LoggerFactory;

/**
 * {@code dledger-node --group G --id n0 --peers "n0-127.0.0.1:P0;n1-..." --store DIR [--data-file-size B]
 * [--index-file-size B] [--preferred-leader n1] [--batch-push]}
 *
 * <p>One DLedger 0.3.1.2 member with its file store (the library the 4.9.7 broker's DLedger CommitLog runs),
 * until the process is stopped. It prints {@code {"event":"started"}}, then {@code {"event":"role","term":T,
 * "role":R}} on every role change, and {@code {"event":"stopped"}} when SIGTERM shuts it down. DLedger's
 * own log goes to stderr at INFO.
 */
final class DLedgerNode {
    private DLedgerNode() {
    }

    static void run(Args a) throws Exception {
        ((ch.qos.logback.classic.Logger) LoggerFactory.getLogger("io.openmessaging.storage.dledger"))
            .setLevel(Level.INFO);
        DLedgerConfig config = new DLedgerConfig();
        config.setGroup(a.require("group"));
        config.setSelfId(a.require("id"));
        config.setPeers(a.require("peers"));
        config.setStoreBaseDir(a.require("store"));
        config.setMappedFileSizeForEntryData(a.getInt("data-file-size", config.getMappedFileSizeForEntryData()));
        config.setMappedFileSizeForEntryIndex(a.getInt("index-file-size", config.getMappedFileSizeForEntryIndex()));
        if (a.has("preferred-leader")) {
            config.setPreferredLeaderIds(a.require("preferred-leader"));
        }
        config.setEnableBatchPush(a.has("batch-push"));
        String selfId = config.getSelfId();
        DLedgerServer server = new DLedgerServer(config);
        server.getDLedgerLeaderElector().addRoleChangeHandler(new DLedgerLeaderElector.RoleChangeHandler() {
            @Override
            public void handle(long term, MemberState.Role role) {
                Map<String, Object> event = new LinkedHashMap<>();
                event.put("event", "role");
                event.put("id", selfId);
                event.put("term", term);
                event.put("role", role.name());
                Peer.Out.emit(event);
            }

            @Override
            public void startup() {
            }

            @Override
            public void shutdown() {
            }
        });
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            server.shutdown();
            Map<String, Object> event = new LinkedHashMap<>();
            event.put("event", "stopped");
            event.put("id", selfId);
            Peer.Out.emit(event);
            stopped.countDown();
        }));
        server.startup();
        Map<String, Object> started = new LinkedHashMap<>();
        started.put("event", "started");
        started.put("id", selfId);
        started.put("end", server.getDLedgerStore().getLedgerEndIndex());
        started.put("term", server.getMemberState().currTerm());
        Peer.Out.emit(started);
        stopped.await();
    }
}
