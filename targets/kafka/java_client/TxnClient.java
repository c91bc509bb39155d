/*
 * kraft-chaos's Java client program: Apache Kafka's own Java client (kafka-clients, of the
 * release under test) driven over a line protocol, for the transactional queue workload.
 *
 * Built at set-up by targets/kafka/java_client.py (javac against the release's
 * kafka-clients, Gson and slf4j; cached per release) and driven by
 * targets/kafka/txn_java.py. Protocol (targets/kafka/java_protocol.py is the Python
 * side): one JSON object per line on stdin, one per line on stdout, answered in any order
 * and matched by "id".
 *
 *   request:  {"id": N, "op": OP, "session": S, ...arguments}
 *   answer:   {"id": N, "ok": true, "result": {...}}
 *          or {"id": N, "ok": false, "error": {"class": fully qualified exception class,
 *              "message", "causes": [class, ...], "retriable", "abortable", "fatal",
 *              "sync", "txn_state"}}
 *
 * Each session (one producer and one consumer) runs its ops in order on a thread of its
 * own; sessions run side by side. Ops: hello, open, assign, subscribe, send, poll, seek,
 * begin, send_offsets, commit, abort, commit_offsets, info, close (a crash: see crash()), exit. Nothing but the
 * protocol is written to stdout (System.out is pointed at stderr; the client library's
 * log goes to stderr through slf4j-simple).
 *
 * Errors: "retriable" is the client library's own word (RetriableException, and the
 * producer's TimeoutException/InterruptException on a transactional call, which its
 * javadoc says may be retried); "abortable" and "fatal" are the producer's transaction
 * manager's state after the error (hasAbortableError, hasFatalError), read by reflection
 * because the library does not publish them; "sync": the call threw before the record
 * was handed to the producer (send only). "txn_state": the transaction manager's state.
 */

import com.google.gson.Gson;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;

import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public final class TxnClient {
    private static final Gson GSON = new Gson();
    private static PrintStream protocol;
    private static final Map<String, Session> SESSIONS = new ConcurrentHashMap<>();

    /** A request failed before the client library was called (bad arguments, unknown session). */
    static final class ProtocolError extends RuntimeException {
        ProtocolError(String message) { super(message); }
    }

    /** One producer and one consumer, and the thread their ops run on. */
    static final class Session {
        final String name;
        final ExecutorService thread;
        KafkaProducer<String, String> producer;
        KafkaConsumer<String, String> consumer;
        boolean transactional;

        Session(String name) {
            this.name = name;
            this.thread = Executors.newSingleThreadExecutor(r -> {
                Thread t = new Thread(r, "session-" + name);
                t.setDaemon(true);
                return t;
            });
        }
    }

    public static void main(String[] args) throws Exception {
        protocol = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, "UTF-8");
        System.setOut(System.err);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            JsonObject req;
            try {
                req = JsonParser.parseString(line).getAsJsonObject();
            } catch (RuntimeException e) {
                answer(-1, null, new ProtocolError("not a JSON object: " + e.getMessage()), null);
                continue;
            }
            long id = req.has("id") ? req.get("id").getAsLong() : -1;
            String op = req.has("op") ? req.get("op").getAsString() : "";
            if (op.equals("exit")) {
                answer(id, new JsonObject(), null, null);
                break;
            }
            dispatch(id, op, req);
        }
        for (Session s : SESSIONS.values()) {
            closeQuietly(s, 0);
        }
        protocol.flush();
        System.exit(0);
    }

    static void dispatch(long id, String op, JsonObject req) {
        if (op.equals("hello")) {
            answer(id, hello(), null, null);
            return;
        }
        String name = req.has("session") ? req.get("session").getAsString() : null;
        if (name == null) {
            answer(id, null, new ProtocolError("op " + op + " needs a session"), null);
            return;
        }
        Session s;
        if (op.equals("open")) {
            s = new Session(name);
            if (SESSIONS.putIfAbsent(name, s) != null) {
                answer(id, null, new ProtocolError("session " + name + " is already open"), null);
                return;
            }
        } else {
            s = SESSIONS.get(name);
            if (s == null) {
                answer(id, null, new ProtocolError("no open session " + name), null);
                return;
            }
        }
        final Session session = s;
        if (op.equals("close")) {
            // not behind the session's queue: a crash does not wait for the op in flight
            Thread t = new Thread(() -> answer(id, crash(session, req), null, null), "close-" + name);
            t.setDaemon(true);
            t.start();
            return;
        }
        session.thread.submit(() -> {
            try {
                answer(id, run(session, op, req), null, session);
            } catch (SyncSendError e) {
                answer(id, null, e.getCause(), session, true);
            } catch (Throwable e) {
                answer(id, null, e, session);
                if (op.equals("open")) {
                    closeQuietly(session, 0);
                }
            }
        });
    }

    /** The version of kafka-clients on the classpath, from the properties file it ships. */
    static JsonObject hello() {
        JsonObject out = new JsonObject();
        Properties p = new Properties();
        try (InputStream is = TxnClient.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            if (is != null) {
                p.load(is);
            }
        } catch (Exception e) {
            // leave them unknown
        }
        out.addProperty("kafka_clients", p.getProperty("version", "unknown"));
        out.addProperty("commit", p.getProperty("commitId", "unknown"));
        out.addProperty("java", System.getProperty("java.version"));
        out.addProperty("pid", ProcessHandle.current().pid());
        return out;
    }

    /** A send that threw before the record reached the producer's buffer. */
    static final class SyncSendError extends RuntimeException {
        SyncSendError(Throwable cause) { super(cause); }
    }

    static JsonObject run(Session s, String op, JsonObject req) throws Exception {
        JsonObject out = new JsonObject();
        switch (op) {
            case "open":
                open(s, req);
                return info(s);
            case "info":
                return info(s);
            case "assign": {
                List<TopicPartition> tps = partitions(req.getAsJsonArray("partitions"));
                s.consumer.assign(tps);
                if (req.has("from_beginning") && req.get("from_beginning").getAsBoolean()) {
                    s.consumer.seekToBeginning(tps);
                }
                return out;
            }
            case "subscribe": {
                List<String> topics = new ArrayList<>();
                for (JsonElement e : req.getAsJsonArray("topics")) {
                    topics.add(e.getAsString());
                }
                s.consumer.subscribe(topics);
                return out;
            }
            case "send": {
                ProducerRecord<String, String> rec = new ProducerRecord<>(req.get("topic").getAsString(),
                        req.get("partition").getAsInt(), null, req.get("value").getAsString());
                Future<RecordMetadata> f;
                try {
                    f = s.producer.send(rec);
                } catch (RuntimeException e) {
                    throw new SyncSendError(e);
                }
                RecordMetadata m = f.get(req.get("timeout_ms").getAsLong(), TimeUnit.MILLISECONDS);
                out.addProperty("offset", m.hasOffset() ? m.offset() : -1);
                return out;
            }
            case "poll": {
                JsonArray records = new JsonArray();
                if (!s.consumer.assignment().isEmpty() || !s.consumer.subscription().isEmpty()) {
                    ConsumerRecords<String, String> rs = s.consumer.poll(Duration.ofMillis(req.get("wait_ms").getAsLong()));
                    for (TopicPartition tp : rs.partitions()) {
                        for (ConsumerRecord<String, String> r : rs.records(tp)) {
                            JsonArray row = new JsonArray();
                            row.add(r.topic());
                            row.add(r.partition());
                            row.add(r.offset());
                            row.add(r.value());
                            records.add(row);
                        }
                    }
                }
                out.add("records", records);
                return out;
            }
            case "seek": {
                // only the keys assigned now (a subscribed consumer may have lost some)
                java.util.Set<TopicPartition> assigned = s.consumer.assignment();
                JsonArray skipped = new JsonArray();
                for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets(req.getAsJsonArray("offsets")).entrySet()) {
                    if (assigned.contains(e.getKey())) {
                        s.consumer.seek(e.getKey(), e.getValue().offset());
                    } else {
                        JsonArray tp = new JsonArray();
                        tp.add(e.getKey().topic());
                        tp.add(e.getKey().partition());
                        skipped.add(tp);
                    }
                }
                out.add("skipped", skipped);
                return out;
            }
            case "begin":
                s.producer.beginTransaction();
                return out;
            case "send_offsets":
                s.producer.sendOffsetsToTransaction(offsets(req.getAsJsonArray("offsets")), s.consumer.groupMetadata());
                return out;
            case "commit":
                s.producer.commitTransaction();
                return info(s);
            case "abort":
                s.producer.abortTransaction();
                return out;
            case "commit_offsets":
                s.consumer.commitSync(offsets(req.getAsJsonArray("offsets")), Duration.ofMillis(req.get("timeout_ms").getAsLong()));
                return out;
            default:
                throw new ProtocolError("unknown op " + op);
        }
    }

    static void open(Session s, JsonObject req) {
        String bootstrap = req.get("bootstrap").getAsString();
        String timeout = String.valueOf(req.get("timeout_ms").getAsLong());
        String clientId = req.has("client_id") ? req.get("client_id").getAsString() : "kraft-chaos-" + s.name;
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", clientId + "-producer");
        p.put("acks", "all");
        p.put("enable.idempotence", "true");
        p.put("linger.ms", "0");
        p.put("request.timeout.ms", timeout);
        p.put("max.block.ms", timeout);
        p.put("delivery.timeout.ms", timeout);
        p.put("reconnect.backoff.max.ms", "1000");
        p.put("metadata.max.age.ms", "3000");
        String txnId = req.has("transactional_id") && !req.get("transactional_id").isJsonNull()
                ? req.get("transactional_id").getAsString() : null;
        if (txnId != null) {
            p.put("transactional.id", txnId);
            p.put("transaction.timeout.ms", String.valueOf(req.get("transaction_timeout_ms").getAsLong()));
        }
        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("client.id", clientId + "-consumer");
        c.put("group.id", req.get("group_id").getAsString());
        c.put("isolation.level", "read_committed");
        c.put("enable.auto.commit", "false");
        c.put("auto.offset.reset", "earliest");
        c.put("max.poll.records", String.valueOf(req.get("max_poll_records").getAsInt()));
        c.put("session.timeout.ms", String.valueOf(req.get("session_timeout_ms").getAsLong()));
        c.put("heartbeat.interval.ms", String.valueOf(Math.max(100, req.get("session_timeout_ms").getAsLong() / 5)));
        c.put("request.timeout.ms", timeout);
        c.put("default.api.timeout.ms", timeout);
        c.put("reconnect.backoff.max.ms", "1000");
        c.put("metadata.max.age.ms", "3000");
        s.producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
        s.consumer = new KafkaConsumer<>(c, new StringDeserializer(), new StringDeserializer());
        s.transactional = txnId != null;
        if (s.transactional) {
            s.producer.initTransactions();
        }
    }

    /** What the session can tell of its transaction protocol (KIP-890 part 2 from 4.0). */
    static JsonObject info(Session s) {
        JsonObject out = new JsonObject();
        Object tm = field(s.producer, "transactionManager");
        Object v2 = tm == null ? null : call(tm, "isTransactionV2Enabled");
        if (v2 instanceof Boolean) {
            out.addProperty("transaction_v2", (Boolean) v2);
        } else {
            out.add("transaction_v2", null);
        }
        Object state = tm == null ? null : field(tm, "currentState");
        out.addProperty("txn_state", state == null ? null : state.toString());
        return out;
    }

    static List<TopicPartition> partitions(JsonArray a) {
        List<TopicPartition> out = new ArrayList<>();
        for (JsonElement e : a) {
            JsonArray tp = e.getAsJsonArray();
            out.add(new TopicPartition(tp.get(0).getAsString(), tp.get(1).getAsInt()));
        }
        return out;
    }

    static Map<TopicPartition, OffsetAndMetadata> offsets(JsonArray a) {
        Map<TopicPartition, OffsetAndMetadata> out = new LinkedHashMap<>();
        for (JsonElement e : a) {
            JsonArray tpo = e.getAsJsonArray();
            out.put(new TopicPartition(tpo.get(0).getAsString(), tpo.get(1).getAsInt()),
                    new OffsetAndMetadata(tpo.get(2).getAsLong()));
        }
        return out;
    }

    /**
     * A crash: wake a consumer blocked in poll or commitSync, close the producer without
     * waiting for what it has not sent (a blocked transactional call then fails), then close
     * the consumer on the session's thread once the op in flight returned (the consumer is
     * not thread-safe), waiting at most timeout_ms for that.
     */
    static JsonObject crash(Session s, JsonObject req) {
        long waitMs = req.has("timeout_ms") ? req.get("timeout_ms").getAsLong() : 5000;
        SESSIONS.remove(s.name, s);
        JsonObject out = new JsonObject();
        try {
            if (s.consumer != null) {
                s.consumer.wakeup();
            }
            if (s.producer != null) {
                s.producer.close(Duration.ZERO);
            }
        } catch (Throwable e) {
            out.addProperty("warning", e.toString());
        }
        Future<?> f = s.thread.submit(() -> closeQuietly(s, 0));
        try {
            f.get(waitMs, TimeUnit.MILLISECONDS);
            out.addProperty("closed", true);
        } catch (Exception e) {
            out.addProperty("closed", false);
            out.addProperty("warning", "the session's op in flight did not return within " + waitMs + " ms");
        }
        return out;
    }

    @SuppressWarnings("deprecation")    // close(Duration): 4.x adds close(CloseOptions), 3.x has only this
    static void closeQuietly(Session s, long timeoutMs) {
        Duration d = Duration.ofMillis(timeoutMs);
        try {
            if (s.producer != null) {
                s.producer.close(d);
            }
        } catch (Throwable e) {
            System.err.println("session " + s.name + ": producer close: " + e);
        }
        try {
            if (s.consumer != null) {
                s.consumer.close(d);
            }
        } catch (Throwable e) {
            System.err.println("session " + s.name + ": consumer close: " + e);
        }
        s.producer = null;
        s.consumer = null;
        SESSIONS.remove(s.name, s);
        s.thread.shutdown();
    }

    // -- reflection into the producer's transaction manager (not a public API) -------------

    static Object field(Object o, String name) {
        for (Class<?> k = o.getClass(); k != null; k = k.getSuperclass()) {
            try {
                Field f = k.getDeclaredField(name);
                f.setAccessible(true);
                return f.get(o);
            } catch (NoSuchFieldException e) {
                // look in the superclass
            } catch (Exception e) {
                return null;
            }
        }
        return null;
    }

    static Object call(Object o, String name) {
        try {
            Method m = o.getClass().getDeclaredMethod(name);
            m.setAccessible(true);
            return m.invoke(o);
        } catch (Exception e) {
            return null;
        }
    }

    // -- answers ------------------------------------------------------------------------------

    static void answer(long id, JsonObject result, Throwable error, Session s) {
        answer(id, result, error, s, false);
    }

    static void answer(long id, JsonObject result, Throwable error, Session s, boolean sync) {
        JsonObject out = new JsonObject();
        out.addProperty("id", id);
        out.addProperty("ok", error == null);
        if (error == null) {
            out.add("result", result == null ? new JsonObject() : result);
        } else {
            out.add("error", describe(error, s, sync));
        }
        String text = GSON.toJson(out);
        synchronized (TxnClient.class) {
            protocol.println(text);
            protocol.flush();
        }
    }

    static JsonObject describe(Throwable t, Session s, boolean sync) {
        Throwable e = t;
        while ((e instanceof ExecutionException || e instanceof java.util.concurrent.CompletionException)
                && e.getCause() != null) {
            e = e.getCause();
        }
        JsonObject out = new JsonObject();
        out.addProperty("class", e.getClass().getName());
        out.addProperty("message", String.valueOf(e.getMessage()));
        JsonArray causes = new JsonArray();
        for (Throwable c = e.getCause(); c != null && causes.size() < 8; c = c.getCause()) {
            causes.add(c.getClass().getName());
        }
        out.add("causes", causes);
        boolean retriable = e instanceof RetriableException || e instanceof InterruptException
                || e instanceof java.util.concurrent.TimeoutException;
        out.addProperty("retriable", retriable);
        Object tm = s == null || s.producer == null ? null : field(s.producer, "transactionManager");
        Object abortable = tm == null ? null : call(tm, "hasAbortableError");
        Object fatal = tm == null ? null : call(tm, "hasFatalError");
        out.addProperty("abortable", Boolean.TRUE.equals(abortable));
        out.addProperty("fatal", Boolean.TRUE.equals(fatal));
        out.addProperty("protocol", e instanceof ProtocolError);
        out.addProperty("sync", sync);
        Object state = tm == null ? null : field(tm, "currentState");
        out.addProperty("txn_state", state == null ? null : state.toString());
        return out;
    }
}
