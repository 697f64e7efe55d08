package org.rocketmqpy.compat;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.consumer.store.OffsetSerializeWrapper;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/** Peers for the consumer tests: producers of every message kind and of bulk data, a benchmark consumer,
 * and Java's own reading and writing of a broadcasting consumer's offsets file. */
final class ConsumerPeerCommands {
    private ConsumerPeerCommands() {
    }

    /**
     * {@code produce-kinds --namesrv ADDR --topic T [--per-kind N] [--group G]}: N messages of each kind
     * (tags, keys, properties, compressed, batch, ordered, delayed, transaction); one line per message:
     * {@code {"kind":..,"index":..,"msgId":..,"queueId":..,"queueOffset":..}}. Delayed messages use level 1
     * (1 s); transactional ones are committed by the local transaction.
     */
    static void produceKinds(Args a) throws Exception {
        String topic = a.require("topic");
        int perKind = a.getInt("per-kind", 3);
        String group = a.get("group", "compat_kinds_producer");
        DefaultMQProducer producer = new DefaultMQProducer(group);
        producer.setNamesrvAddr(a.require("namesrv"));
        producer.setSendMsgTimeout(10000);
        producer.start();
        try {
            for (int i = 0; i < perKind; i++) {
                Message m = new Message(topic, i % 2 == 0 ? "TagA" : "TagB", body("tags", i));
                emit("tags", i, producer.send(m));
            }
            for (int i = 0; i < perKind; i++) {
                Message m = new Message(topic, "TagK", "key-" + i + " other-" + i, body("keys", i));
                emit("keys", i, producer.send(m));
            }
            for (int i = 0; i < perKind; i++) {
                Message m = new Message(topic, "TagP", body("props", i));
                m.putUserProperty("color", i % 2 == 0 ? "red" : "blue");
                m.putUserProperty("index", String.valueOf(i));
                m.putUserProperty("unicode", "värde-ü-" + i);
                emit("props", i, producer.send(m));
            }
            for (int i = 0; i < perKind; i++) {
                byte[] big = new byte[6000 + i];
                for (int k = 0; k < big.length; k++) {
                    big[k] = (byte) ('a' + (k * 7 + i) % 26);
                }
                emit("compressed", i, producer.send(new Message(topic, "TagC", big)));
            }
            List<Message> batch = new ArrayList<>();
            for (int i = 0; i < perKind; i++) {
                Message m = new Message(topic, "TagBatch", body("batch", i));
                m.putUserProperty("index", String.valueOf(i));
                batch.add(m);
            }
            SendResult batchResult = producer.send(batch);
            String[] ids = batchResult.getMsgId().split(",");
            for (int i = 0; i < ids.length; i++) {
                Map<String, Object> out = new LinkedHashMap<>();
                out.put("kind", "batch");
                out.put("index", i);
                out.put("msgId", ids[i]);
                out.put("queueId", batchResult.getMessageQueue().getQueueId());
                out.put("queueOffset", batchResult.getQueueOffset() + i);
                Peer.Out.emit(out);
            }
            for (int i = 0; i < perKind; i++) {
                Message m = new Message(topic, "TagO", "order-" + (i % 2), body("ordered", i));
                SendResult r = producer.send(m, (mqs, msg, arg) -> mqs.get((Integer) arg % mqs.size()), i % 2);
                emit("ordered", i, r);
            }
            for (int i = 0; i < perKind; i++) {
                Message m = new Message(topic, "TagD", body("delayed", i));
                m.setDelayTimeLevel(1);
                emit("delayed", i, producer.send(m));
            }
        } finally {
            producer.shutdown();
        }
        TransactionMQProducer tx = new TransactionMQProducer(group + "_tx");
        tx.setNamesrvAddr(a.require("namesrv"));
        tx.setTransactionListener(new TransactionListener() {
            @Override
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                return LocalTransactionState.COMMIT_MESSAGE;
            }

            @Override
            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                return LocalTransactionState.COMMIT_MESSAGE;
            }
        });
        tx.start();
        try {
            for (int i = 0; i < perKind; i++) {
                Message m = new Message(topic, "TagT", body("transaction", i));
                emit("transaction", i, tx.sendMessageInTransaction(m, null));
            }
        } finally {
            tx.shutdown();
        }
    }

    private static byte[] body(String kind, int i) {
        return (kind + "-" + i).getBytes(StandardCharsets.UTF_8);
    }

    private static void emit(String kind, int index, SendResult r) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("kind", kind);
        out.put("index", index);
        out.put("msgId", r.getMsgId());
        out.put("queueId", r.getMessageQueue().getQueueId());
        out.put("queueOffset", r.getQueueOffset());
        out.put("status", r.getSendStatus().name());
        Peer.Out.emit(out);
    }

    /**
     * {@code produce-bulk --namesrv ADDR --topic T --count N [--body-size B] [--batch K]}: N messages of B
     * bytes in synchronous batches of K; one line {@code {"sent":N,"seconds":S}}.
     */
    static void produceBulk(Args a) throws Exception {
        String topic = a.require("topic");
        int count = a.getInt("count", 1000);
        int size = a.getInt("body-size", 1024);
        int batchSize = a.getInt("batch", 64);
        DefaultMQProducer producer = new DefaultMQProducer(a.get("group", "compat_bench_producer"));
        producer.setNamesrvAddr(a.require("namesrv"));
        producer.setSendMsgTimeout(20000);
        producer.start();
        long began = System.nanoTime();
        int sent = 0;
        try {
            while (sent < count) {
                List<Message> batch = new ArrayList<>();
                for (int i = 0; i < batchSize && sent + i < count; i++) {
                    byte[] body = new byte[size];
                    int n = sent + i;
                    for (int k = 0; k < body.length; k++) {
                        body[k] = (byte) ('a' + (k + n) % 26);
                    }
                    batch.add(new Message(topic, "Bench", body));
                }
                producer.send(batch);
                sent += batch.size();
            }
        } finally {
            producer.shutdown();
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("sent", sent);
        out.put("seconds", (System.nanoTime() - began) / 1e9);
        Peer.Out.emit(out);
    }

    /**
     * {@code consume-bench --namesrv ADDR --topic T --group G --count N [--timeout-ms MS] [--orderly]}: a default
     * DefaultMQPushConsumer from the first offset with a listener that only counts (MessageListenerConcurrently,
     * or MessageListenerOrderly with {@code --orderly}); one line
     * {@code {"count":n,"seconds":S,"firstToLastSeconds":F,"startSeconds":T,"tenths":[..],"flowControlTimes":C,
     * "maxSpanFlowControlTimes":M}}: S from start() to the N-th message, F from the first message to the N-th,
     * tenths the messages of each 100 ms from the first one, C and M the consumer's own counts of pulls paused by
     * its flow control (cached messages or MiB, offset span).
     */
    static void consumeBench(Args a) throws Exception {
        final int count = a.getInt("count", 1000);
        long timeoutMs = a.getLong("timeout-ms", 300000);
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(a.require("group"));
        consumer.setNamesrvAddr(a.require("namesrv"));
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(a.require("topic"), "*");
        final AtomicInteger seen = new AtomicInteger();
        final AtomicLong bytes = new AtomicLong();
        final AtomicLong first = new AtomicLong();
        final AtomicLong last = new AtomicLong();
        final AtomicIntegerArray tenths = new AtomicIntegerArray((int) (timeoutMs / 100) + 1);
        final CountDownLatch done = new CountDownLatch(1);
        final Consumer<List<MessageExt>> tally = msgs -> {
            for (MessageExt m : msgs) {
                bytes.addAndGet(m.getBody().length);
                int n = seen.incrementAndGet();
                long now = System.nanoTime();
                if (n == 1) {
                    first.set(now);
                }
                int tenth = (int) ((now - first.get()) / 100_000_000L);
                if (tenth < tenths.length()) {
                    tenths.incrementAndGet(tenth);
                }
                if (n == count) {
                    last.set(now);
                    done.countDown();
                }
            }
        };
        if (a.has("orderly")) {
            consumer.registerMessageListener((MessageListenerOrderly) (msgs, ctx) -> {
                tally.accept(msgs);
                return ConsumeOrderlyStatus.SUCCESS;
            });
        } else {
            consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                tally.accept(msgs);
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
        }
        long began = System.nanoTime();
        consumer.start();
        boolean complete = done.await(timeoutMs, TimeUnit.MILLISECONDS);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("count", seen.get());
        out.put("complete", complete);
        out.put("bytes", bytes.get());
        out.put("seconds", complete ? (last.get() - began) / 1e9 : -1);
        out.put("firstToLastSeconds", complete ? (last.get() - first.get()) / 1e9 : -1);
        out.put("startSeconds", (first.get() - began) / 1e9);
        List<Integer> used = new ArrayList<>();
        int lastTenth = complete ? (int) Math.min((last.get() - first.get()) / 100_000_000L, tenths.length() - 1) : -1;
        for (int i = 0; i <= lastTenth; i++) {
            used.add(tenths.get(i));
        }
        out.put("tenths", used);
        out.put("flowControlTimes", privateLong(consumer.getDefaultMQPushConsumerImpl(), "queueFlowControlTimes"));
        out.put("maxSpanFlowControlTimes",
            privateLong(consumer.getDefaultMQPushConsumerImpl(), "queueMaxSpanFlowControlTimes"));
        Peer.Out.emit(out);
        consumer.shutdown();
    }

    /** A private long field of DefaultMQPushConsumerImpl (its flow control counters have no getter). */
    private static long privateLong(Object target, String name) throws ReflectiveOperationException {
        java.lang.reflect.Field field = target.getClass().getDeclaredField(name);
        field.setAccessible(true);
        return field.getLong(target);
    }

    /**
     * {@code consumer-status --namesrv ADDR --group G --topic T [--client-id ID]}: DefaultMQAdminExt's
     * getConsumeStatus (the broker asks each consumer with GET_CONSUMER_STATUS_FROM_CLIENT); one line per
     * client and queue {@code {"clientId":..,"queueId":..,"offset":..}}.
     */
    static void consumerStatus(Args a) throws Exception {
        DefaultMQAdminExt admin = new DefaultMQAdminExt();
        admin.setNamesrvAddr(a.require("namesrv"));
        admin.setInstanceName("consumer-status-" + System.nanoTime());
        admin.start();
        try {
            Map<String, Map<MessageQueue, Long>> table =
                admin.getConsumeStatus(a.require("topic"), a.require("group"), a.get("client-id", ""));
            for (Map.Entry<String, Map<MessageQueue, Long>> client : table.entrySet()) {
                for (Map.Entry<MessageQueue, Long> e : client.getValue().entrySet()) {
                    Map<String, Object> out = new LinkedHashMap<>();
                    out.put("clientId", client.getKey());
                    out.put("topic", e.getKey().getTopic());
                    out.put("queueId", e.getKey().getQueueId());
                    out.put("offset", e.getValue());
                    Peer.Out.emit(out);
                }
            }
        } finally {
            admin.shutdown();
        }
    }

    /**
     * {@code allocate}: reads JSON cases from stdin, one per line,
     * {@code {"strategy":"AVG|AVG_BY_CIRCLE|CONSISTENT_HASH|MACHINE_ROOM","cids":[..],"queues":[[topic,broker,id],..],
     * "rooms":[..]}}, and prints per case Java's allocation for every client id:
     * {@code {"allocation":{"cid":[[topic,broker,id],..],..}}}.
     */
    static void allocate(Args a) throws Exception {
        java.io.BufferedReader in = new java.io.BufferedReader(
            new java.io.InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.trim().isEmpty()) {
                continue;
            }
            com.alibaba.fastjson.JSONObject c = com.alibaba.fastjson.JSON.parseObject(line);
            List<String> cids = c.getJSONArray("cids").toJavaList(String.class);
            List<MessageQueue> queues = new ArrayList<>();
            for (Object o : c.getJSONArray("queues")) {
                com.alibaba.fastjson.JSONArray q = (com.alibaba.fastjson.JSONArray) o;
                queues.add(new MessageQueue(q.getString(0), q.getString(1), q.getIntValue(2)));
            }
            org.apache.rocketmq.client.consumer.AllocateMessageQueueStrategy strategy;
            switch (c.getString("strategy")) {
                case "AVG_BY_CIRCLE":
                    strategy = new org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragelyByCircle();
                    break;
                case "CONSISTENT_HASH":
                    strategy = new org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueConsistentHash();
                    break;
                case "MACHINE_ROOM":
                    org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueByMachineRoom room =
                        new org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueByMachineRoom();
                    room.setConsumeridcs(new java.util.HashSet<>(c.getJSONArray("rooms").toJavaList(String.class)));
                    strategy = room;
                    break;
                default:
                    strategy = new org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely();
            }
            Map<String, Object> allocation = new LinkedHashMap<>();
            for (String cid : cids) {
                List<List<Object>> mine = new ArrayList<>();
                for (MessageQueue mq : strategy.allocate("g", cid, queues, cids)) {
                    List<Object> q = new ArrayList<>();
                    q.add(mq.getTopic());
                    q.add(mq.getBrokerName());
                    q.add(mq.getQueueId());
                    mine.add(q);
                }
                allocation.put(cid, mine);
            }
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("allocation", allocation);
            Peer.Out.emit(out);
        }
    }

    /**
     * {@code offset-file --read PATH} prints Java's reading of a broadcasting consumer's offsets.json:
     * one line per entry {@code {"topic":..,"brokerName":..,"queueId":..,"offset":..}}.
     * {@code offset-file --write PATH --entry topic,broker,queueId,offset ...} writes one as Java does.
     */
    static void offsetFile(Args a) throws Exception {
        if (a.has("read")) {
            String content = MixAll.file2String(new File(a.require("read")));
            OffsetSerializeWrapper wrapper = OffsetSerializeWrapper.fromJson(content, OffsetSerializeWrapper.class);
            for (Map.Entry<MessageQueue, AtomicLong> e : wrapper.getOffsetTable().entrySet()) {
                Map<String, Object> out = new LinkedHashMap<>();
                out.put("topic", e.getKey().getTopic());
                out.put("brokerName", e.getKey().getBrokerName());
                out.put("queueId", e.getKey().getQueueId());
                out.put("offset", e.getValue().get());
                Peer.Out.emit(out);
            }
            return;
        }
        OffsetSerializeWrapper wrapper = new OffsetSerializeWrapper();
        for (String entry : a.all("entry")) {
            String[] f = entry.split(",");
            wrapper.getOffsetTable().put(new MessageQueue(f[0], f[1], Integer.parseInt(f[2])),
                new AtomicLong(Long.parseLong(f[3])));
        }
        MixAll.string2File(wrapper.toJson(true), a.require("write"));
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("written", a.require("write"));
        Peer.Out.emit(out);
    }
}
