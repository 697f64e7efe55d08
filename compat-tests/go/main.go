// Command gocompat drives the Go client (github.com/apache/rocketmq-client-go/v2) for the compatibility
// tests: each subcommand prints one JSON object per line on stdout; the client's own log goes to stderr.
//
//	send --namesrv A --topic T --mode sync|async|oneway|batch --count N [--tag X] [--keys K] [--prop k=v]...
//	     [--body B] [--pad N] [--shards K] [--batch-size N]     ({i} in B, K and prop values is the index)
//	push --namesrv A --topic T --group G [--expr E | --sql S] --expect N [--linger S] [--timeout S]
//	     [--orderly] [--retry-first]
//	pull --namesrv A --topic T --group G [--expr E | --sql S] --expect N [--linger S] [--timeout S]
//	keyed --namesrv A --topic T [--keys PREFIX] [--body-size N]     (until stdin closes)
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

var (
	outMu sync.Mutex
	out   = json.NewEncoder(os.Stdout)
)

func emit(v map[string]interface{}) {
	outMu.Lock()
	defer outMu.Unlock()
	if err := out.Encode(v); err != nil {
		panic(err)
	}
}

func fail(format string, args ...interface{}) {
	emit(map[string]interface{}{"error": fmt.Sprintf(format, args...)})
	os.Exit(1)
}

type props []string

func (p *props) String() string     { return strings.Join(*p, ",") }
func (p *props) Set(v string) error { *p = append(*p, v); return nil }

// padding is a deterministic filler the test rebuilds: bodies over 4 KiB are sent compressed.
func padding(n int) string {
	var b strings.Builder
	for k := 0; k < n; k++ {
		b.WriteByte(byte('a' + (k*7)%26))
	}
	return b.String()
}

func fill(template string, i int) string {
	return strings.ReplaceAll(template, "{i}", strconv.Itoa(i))
}

func send(args []string) {
	fs := flag.NewFlagSet("send", flag.ExitOnError)
	namesrv := fs.String("namesrv", "", "name server address")
	topic := fs.String("topic", "", "topic")
	mode := fs.String("mode", "sync", "sync, async, oneway or batch")
	count := fs.Int("count", 1, "messages")
	body := fs.String("body", "go-{i}", "body template")
	pad := fs.Int("pad", 0, "filler characters appended to each body")
	tag := fs.String("tag", "", "tag")
	keys := fs.String("keys", "", "space-separated keys template")
	shards := fs.Int("shards", 0, "sharding keys shard-(i mod K), sent with the hash queue selector")
	batchSize := fs.Int("batch-size", 0, "messages per batch (mode batch; default all)")
	var properties props
	fs.Var(&properties, "prop", "user property k=v (repeatable)")
	_ = fs.Parse(args)

	opts := []producer.Option{
		producer.WithNameServer([]string{*namesrv}),
		producer.WithGroupName(fmt.Sprintf("GoCompatProducer-%d", os.Getpid())),
		producer.WithRetry(2),
	}
	if *shards > 0 {
		opts = append(opts, producer.WithQueueSelector(producer.NewHashQueueSelector()))
	}
	p, err := producer.NewDefaultProducer(opts...)
	if err != nil {
		fail("new producer: %v", err)
	}
	if err := p.Start(); err != nil {
		fail("start producer: %v", err)
	}
	defer func() { _ = p.Shutdown() }()

	messages := make([]*primitive.Message, *count)
	for i := range messages {
		m := primitive.NewMessage(*topic, []byte(fill(*body, i)+padding(*pad)))
		if *tag != "" {
			m.WithTag(*tag)
		}
		if *keys != "" {
			m.WithKeys(strings.Fields(fill(*keys, i)))
		}
		if *shards > 0 {
			m.WithShardingKey(fmt.Sprintf("shard-%d", i%*shards))
		}
		for _, kv := range properties {
			k, v, _ := strings.Cut(kv, "=")
			m.WithProperty(k, fill(v, i))
		}
		messages[i] = m
	}
	sent := func(i int, msgID, offsetMsgID string, r *primitive.SendResult, offset int64) {
		line := map[string]interface{}{"event": "sent", "index": i, "body": string(messages[i].Body),
			"msgId": msgID, "offsetMsgId": offsetMsgID}
		if r != nil {
			line["status"] = int(r.Status)
			line["brokerName"] = r.MessageQueue.BrokerName
			line["queueId"] = r.MessageQueue.QueueId
			line["queueOffset"] = offset
		}
		emit(line)
	}
	ctx := context.Background()
	switch *mode {
	case "sync":
		for i, m := range messages {
			r, err := p.SendSync(ctx, m)
			if err != nil {
				fail("send %d: %v", i, err)
			}
			sent(i, r.MsgID, r.OffsetMsgID, r, r.QueueOffset)
		}
	case "async":
		var wg sync.WaitGroup
		for i, m := range messages {
			i := i
			wg.Add(1)
			err := p.SendAsync(ctx, func(_ context.Context, r *primitive.SendResult, err error) {
				defer wg.Done()
				if err != nil {
					fail("send async %d: %v", i, err)
				}
				sent(i, r.MsgID, r.OffsetMsgID, r, r.QueueOffset)
			}, m)
			if err != nil {
				fail("send async %d: %v", i, err)
			}
		}
		wg.Wait()
	case "oneway":
		for i, m := range messages {
			if err := p.SendOneWay(ctx, m); err != nil {
				fail("send oneway %d: %v", i, err)
			}
			sent(i, m.GetProperty(primitive.PropertyUniqueClientMessageIdKeyIndex), "", nil, 0)
		}
		// v2.1.2 does not flag these frames oneway, so the broker answers them; closing the connection
		// with answers unread makes the kernel reset it and drop the frames it has not sent yet (the last
		// ones). A producer that stays up a moment loses nothing: its reader takes the answers.
		time.Sleep(500 * time.Millisecond)
	case "batch":
		size := *batchSize
		if size <= 0 {
			size = len(messages)
		}
		for start := 0; start < len(messages); start += size {
			end := start + size
			if end > len(messages) {
				end = len(messages)
			}
			r, err := p.SendSync(ctx, messages[start:end]...)
			if err != nil {
				fail("send batch at %d: %v", start, err)
			}
			offsetIDs := strings.Split(r.OffsetMsgID, ",")
			if len(offsetIDs) != end-start {
				fail("batch at %d: %d offset message ids for %d messages: %q", start, len(offsetIDs), end-start,
					r.OffsetMsgID)
			}
			for k := start; k < end; k++ {
				sent(k, messages[k].GetProperty(primitive.PropertyUniqueClientMessageIdKeyIndex),
					offsetIDs[k-start], r, r.QueueOffset+int64(k-start))
			}
		}
	default:
		fail("unknown mode %q", *mode)
	}
}

func received(m *primitive.MessageExt, result string) map[string]interface{} {
	return map[string]interface{}{"event": "msg", "result": result, "topic": m.Topic, "body": string(m.Body),
		"msgId": m.MsgId, "offsetMsgId": m.OffsetMsgId, "tags": m.GetTags(), "keys": m.GetKeys(),
		"properties": m.GetProperties(), "brokerName": m.Queue.BrokerName, "queueId": m.Queue.QueueId,
		"queueOffset": m.QueueOffset, "reconsumeTimes": m.ReconsumeTimes, "storeHost": m.StoreHost}
}

type consumeFlags struct {
	namesrv, topic, group, expr, sql *string
	expect                           *int
	linger, timeout                  *float64
}

func consumeFlagSet(name string) (*flag.FlagSet, consumeFlags) {
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	return fs, consumeFlags{
		namesrv: fs.String("namesrv", "", "name server address"),
		topic:   fs.String("topic", "", "topic"),
		group:   fs.String("group", "", "consumer group"),
		expr:    fs.String("expr", "*", "tag expression"),
		sql:     fs.String("sql", "", "SQL92 expression (instead of --expr)"),
		expect:  fs.Int("expect", 1, "stop once this many messages were consumed successfully"),
		linger:  fs.Float64("linger", 0, "seconds to keep consuming after --expect, to see extra deliveries"),
		timeout: fs.Float64("timeout", 60, "seconds before giving up"),
	}
}

func (c consumeFlags) selector() consumer.MessageSelector {
	if *c.sql != "" {
		return consumer.MessageSelector{Type: consumer.SQL92, Expression: *c.sql}
	}
	return consumer.MessageSelector{Type: consumer.TAG, Expression: *c.expr}
}

func (c consumeFlags) options() []consumer.Option {
	return []consumer.Option{
		consumer.WithNameServer([]string{*c.namesrv}),
		consumer.WithGroupName(*c.group),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	}
}

// counter tells when --expect successes were seen, then waits --linger more seconds (or --timeout).
type counter struct {
	mu      sync.Mutex
	count   int
	reached chan struct{}
	expect  int
}

func (c *counter) add() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.count++
	if c.count == c.expect {
		close(c.reached)
	}
}

func (c *counter) wait(f consumeFlags) {
	timedOut := false
	select {
	case <-c.reached:
		time.Sleep(time.Duration(*f.linger * float64(time.Second)))
	case <-time.After(time.Duration(*f.timeout * float64(time.Second))):
		timedOut = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	emit(map[string]interface{}{"event": "done", "count": c.count, "timedOut": timedOut})
}

func push(args []string) {
	fs, f := consumeFlagSet("push")
	orderly := fs.Bool("orderly", false, "consume orderly (queue locks)")
	retryFirst := fs.Bool("retry-first", false, "fail the first delivery of each message, succeed after")
	_ = fs.Parse(args)

	c, err := consumer.NewPushConsumer(append(f.options(), consumer.WithConsumerOrder(*orderly))...)
	if err != nil {
		fail("new push consumer: %v", err)
	}
	done := &counter{reached: make(chan struct{}), expect: *f.expect}
	var seenMu sync.Mutex
	failedOnce := map[string]bool{}
	err = c.Subscribe(*f.topic, f.selector(), func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		// A message fails once: concurrently, its first delivery from the topic (it comes back through the
		// group's retry topic); orderly, its first delivery in this process (the client redelivers it locally).
		retry := false
		if *retryFirst {
			seenMu.Lock()
			for _, m := range msgs {
				if *orderly && !failedOnce[m.MsgId] {
					failedOnce[m.MsgId], retry = true, true
				} else if !*orderly && m.ReconsumeTimes == 0 {
					retry = true
				}
			}
			seenMu.Unlock()
		}
		for _, m := range msgs {
			result := "ok"
			if retry {
				result = "retry"
			}
			emit(received(m, result))
			if !retry {
				done.add()
			}
		}
		switch {
		case !retry:
			return consumer.ConsumeSuccess, nil
		case *orderly:
			return consumer.SuspendCurrentQueueAMoment, nil
		default:
			if cc, ok := primitive.GetConcurrentlyCtx(ctx); ok {
				cc.DelayLevelWhenNextConsume = 1 // the first delay level, 1 s by default, instead of 10 s
			}
			return consumer.ConsumeRetryLater, nil
		}
	})
	if err != nil {
		fail("subscribe: %v", err)
	}
	if err := c.Start(); err != nil {
		fail("start push consumer: %v", err)
	}
	done.wait(f)
	if err := c.Shutdown(); err != nil {
		fail("shutdown: %v", err)
	}
}

func pull(args []string) {
	fs, f := consumeFlagSet("pull")
	_ = fs.Parse(args)

	c, err := consumer.NewPullConsumer(f.options()...)
	if err != nil {
		fail("new pull consumer: %v", err)
	}
	if err := c.Subscribe(*f.topic, f.selector()); err != nil {
		fail("subscribe: %v", err)
	}
	if err := c.Start(); err != nil {
		fail("start pull consumer: %v", err)
	}
	done := &counter{reached: make(chan struct{}), expect: *f.expect}
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			cr, err := c.Poll(context.Background(), time.Second)
			if consumer.IsNoNewMsgError(err) {
				continue
			}
			if err != nil {
				fail("poll: %v", err)
			}
			for _, m := range cr.GetMsgList() {
				emit(received(m, "ok"))
				done.add()
			}
			c.ACK(context.Background(), cr, consumer.ConsumeSuccess)
		}
	}()
	done.wait(f)
	close(stop)
	if err := c.Shutdown(); err != nil {
		fail("shutdown: %v", err)
	}
}

// keyed sends messages with the keys PREFIX0, PREFIX1, ... one at a time until its stdin closes, as an
// application that must not lose one does: an attempt that fails (an error, or a status other than SEND_OK) is
// printed and the same message is sent again, after a pause, with the same producer, whose settings are the
// client's defaults (v2.1.2 has no knob for its 30 s route refresh). A failover test runs it across a kill -9.
// Lines: {"event":"sent","key","msgId","offsetMsgId","queueId","queueOffset","attempts"} per acknowledged
// key, {"event":"failed","key","error"} per failed attempt, and {"event":"done","acked","failed"} at the end.
func keyed(args []string) {
	fs := flag.NewFlagSet("keyed", flag.ExitOnError)
	namesrv := fs.String("namesrv", "", "name server address")
	topic := fs.String("topic", "", "topic")
	prefix := fs.String("keys", "go-", "key prefix")
	bodySize := fs.Int("body-size", 64, "body bytes")
	_ = fs.Parse(args)

	p, err := producer.NewDefaultProducer(producer.WithNameServer([]string{*namesrv}),
		producer.WithGroupName(fmt.Sprintf("GoCompatKeyed-%d", os.Getpid())))
	if err != nil {
		fail("new producer: %v", err)
	}
	if err := p.Start(); err != nil {
		fail("start producer: %v", err)
	}
	stopping := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stopping)
	}()
	// While the master is dead every attempt fails at once: the pause keeps the loop off a core the election
	// needs (a pause, not something the test waits for).
	const retryPause = 50 * time.Millisecond
	acked, failed := 0, 0
	body := []byte(strings.Repeat("g", *bodySize))
	for i := 0; ; i++ {
		key := *prefix + strconv.Itoa(i)
		m := primitive.NewMessage(*topic, body)
		m.WithKeys([]string{key})
		for attempts := 1; ; attempts++ {
			select {
			case <-stopping:
				_ = p.Shutdown()
				emit(map[string]interface{}{"event": "done", "acked": acked, "failed": failed})
				return
			default:
			}
			r, err := p.SendSync(context.Background(), m)
			if err == nil && r.Status != primitive.SendOK {
				err = fmt.Errorf("send status %d", r.Status)
			}
			if err != nil {
				failed++
				emit(map[string]interface{}{"event": "failed", "key": key, "error": err.Error()})
				select {
				case <-stopping:
				case <-time.After(retryPause):
				}
				continue
			}
			acked++
			emit(map[string]interface{}{"event": "sent", "key": key, "msgId": r.MsgID, "offsetMsgId": r.OffsetMsgID,
				"queueId": r.MessageQueue.QueueId, "queueOffset": r.QueueOffset, "attempts": attempts})
			break
		}
	}
}

func main() {
	level := os.Getenv("GOCOMPAT_LOG_LEVEL") // the client's log on stderr: debug, info, warn (default) or error
	if level == "" {
		level = "warn"
	}
	rlog.SetLogLevel(level)
	if len(os.Args) < 2 {
		fail("usage: gocompat send|push|pull|keyed [flags]")
	}
	switch os.Args[1] {
	case "send":
		send(os.Args[2:])
	case "push":
		push(os.Args[2:])
	case "pull":
		pull(os.Args[2:])
	case "keyed":
		keyed(os.Args[2:])
	default:
		fail("unknown subcommand %q", os.Args[1])
	}
}
