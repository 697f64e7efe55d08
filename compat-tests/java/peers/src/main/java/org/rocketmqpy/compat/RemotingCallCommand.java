package org.rocketmqpy.compat;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.rocketmq.remoting.netty.NettyClientConfig;
import org.apache.rocketmq.remoting.netty.NettyRemotingClient;
import org.apache.rocketmq.remoting.netty.ResponseFuture;
import org.apache.rocketmq.remoting.protocol.LanguageCode;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.SerializeType;

/**
 * {@code remoting-call --addr HOST:PORT --code C --mode sync|async|oneway --serialize JSON|ROCKETMQ
 * [--remark R] [--ext k=v]... [--body-base64 B] [--count K] [--timeout-ms MS] [--version V]
 * [--language L] [--linger-ms MS] [--tls]}
 *
 * <p>Sends RemotingCommands with the official NettyRemotingClient and prints each response. With
 * {@code --tls} the client connects with TLS (NettyClientConfig.useTLS; the tls.* system properties
 * decide how the server's certificate is checked).
 */
final class RemotingCallCommand {
    private RemotingCallCommand() {
    }

    static void run(Args a) throws Exception {
        String addr = a.require("addr");
        String mode = a.get("mode", "sync");
        long timeout = a.getLong("timeout-ms", 5000);
        int count = a.getInt("count", 1);

        NettyClientConfig config = new NettyClientConfig();
        config.setUseTLS(a.has("tls"));
        NettyRemotingClient client = new NettyRemotingClient(config);
        client.start();
        try {
            for (int i = 0; i < count; i++) {
                RemotingCommand req = build(a);
                switch (mode) {
                    case "sync":
                        Peer.Out.emit(Util.command(client.invokeSync(addr, req, timeout)));
                        break;
                    case "async":
                        Peer.Out.emit(async(client, addr, req, timeout));
                        break;
                    case "oneway":
                        client.invokeOneway(addr, req, timeout);
                        Map<String, Object> m = new LinkedHashMap<>();
                        m.put("oneway", true);
                        m.put("sent", true);
                        Peer.Out.emit(m);
                        break;
                    default:
                        throw new IllegalArgumentException("--mode must be sync, async or oneway: " + mode);
                }
            }
            if ("oneway".equals(mode)) {
                // invokeOneway returns once the write is queued; closing at once can drop the frame.
                Thread.sleep(a.getLong("linger-ms", 500));
            }
        } finally {
            client.shutdown();
        }
    }

    private static RemotingCommand build(Args a) {
        RemotingCommand req = RemotingCommand.createRequestCommand(Integer.parseInt(a.require("code")), null);
        req.setSerializeTypeCurrentRPC(SerializeType.valueOf(a.get("serialize", "JSON")));
        if (a.has("version")) {
            req.setVersion(a.getInt("version", 0));
        }
        if (a.has("language")) {
            req.setLanguage(LanguageCode.valueOf(a.get("language", "JAVA")));
        }
        if (a.has("remark")) {
            req.setRemark(a.get("remark", null));
        }
        for (Map.Entry<String, String> e : a.pairs("ext").entrySet()) {
            req.addExtField(e.getKey(), e.getValue());
        }
        if (a.has("body-base64")) {
            req.setBody(Util.unb64(a.get("body-base64", "")));
        }
        return req;
    }

    private static Map<String, Object> async(NettyRemotingClient client, String addr, RemotingCommand req,
        long timeout) throws Exception {
        final CountDownLatch done = new CountDownLatch(1);
        final AtomicReference<ResponseFuture> result = new AtomicReference<>();
        client.invokeAsync(addr, req, timeout, future -> {
            result.set(future);
            done.countDown();
        });
        if (!done.await(timeout + 5000, TimeUnit.MILLISECONDS)) {
            throw new IllegalStateException("async callback not called within " + (timeout + 5000) + " ms");
        }
        ResponseFuture f = result.get();
        if (f.getResponseCommand() == null) {
            throw new IllegalStateException("async call failed: sendOk=" + f.isSendRequestOK()
                + ", timeout=" + f.isTimeout() + ", cause=" + f.getCause());
        }
        return Util.command(f.getResponseCommand());
    }
}
