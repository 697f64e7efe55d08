package org.rocketmqpy.compat;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.utils.MessageUtil;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;

/** The two sides of request-reply with the official client. */
final class RequestReplyCommands {
    private RequestReplyCommands() {
    }

    /**
     * {@code request --namesrv ADDR --topic T --count N [--timeout-ms MS]}: DefaultMQProducer.request
     * of "request-{i}" bodies; one line per reply: {@code {"request":..,"reply":..,"correlationId":..}}.
     */
    static void request(Args a) throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer(a.get("group", "compat_requester_group"));
        producer.setNamesrvAddr(a.require("namesrv"));
        producer.start();
        try {
            int count = a.getInt("count", 1);
            long timeoutMs = a.getLong("timeout-ms", 15000);
            for (int i = 0; i < count; i++) {
                String body = "request-" + i;
                Message msg = new Message(a.require("topic"), "Req", body.getBytes(StandardCharsets.UTF_8));
                Message reply = producer.request(msg, timeoutMs);
                Map<String, Object> out = new LinkedHashMap<>();
                out.put("request", body);
                out.put("reply", new String(reply.getBody(), StandardCharsets.UTF_8));
                out.put("correlationId", reply.getProperty(MessageConst.PROPERTY_CORRELATION_ID));
                out.put("properties", reply.getProperties());
                Peer.Out.emit(out);
            }
        } finally {
            producer.shutdown();
        }
    }

    /**
     * {@code reply --namesrv ADDR --topic T --group G --count N [--timeout-ms MS]}: a push consumer that
     * answers every request message (one with REPLY_TO_CLIENT) with "reply:" + its body, using
     * MessageUtil.createReplyMessage; one line per answered request, then a done line.
     */
    static void reply(Args a) throws Exception {
        final int count = a.getInt("count", 1);
        final DefaultMQProducer producer = new DefaultMQProducer(a.require("group") + "_replier");
        producer.setNamesrvAddr(a.require("namesrv"));
        producer.start();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(a.require("group"));
        consumer.setNamesrvAddr(a.require("namesrv"));
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(a.require("topic"), "*");
        final CountDownLatch latch = new CountDownLatch(count);
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                if (m.getProperty(MessageConst.PROPERTY_MESSAGE_REPLY_TO_CLIENT) == null) {
                    continue;
                }
                try {
                    String body = new String(m.getBody(), StandardCharsets.UTF_8);
                    Message reply = MessageUtil.createReplyMessage(m, ("reply:" + body).getBytes(StandardCharsets.UTF_8));
                    SendResult r = producer.send(reply, 5000);
                    Map<String, Object> out = new LinkedHashMap<>();
                    out.put("request", body);
                    out.put("status", r.getSendStatus().name());
                    out.put("correlationId", m.getProperty(MessageConst.PROPERTY_CORRELATION_ID));
                    Peer.Out.emit(out);
                    latch.countDown();
                } catch (Exception e) {
                    e.printStackTrace(System.err);
                    return ConsumeConcurrentlyStatus.RECONSUME_LATER;
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        boolean complete = latch.await(a.getLong("timeout-ms", 60000), TimeUnit.MILLISECONDS);
        Map<String, Object> done = new LinkedHashMap<>();
        done.put("done", true);
        done.put("timedOut", !complete);
        Peer.Out.emit(done);
        consumer.shutdown();
        producer.shutdown();
    }
}
