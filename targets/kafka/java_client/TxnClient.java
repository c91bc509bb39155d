/*
 * kraft-chaos's Java client program: Apache Kafka's own Java client (kafka-clients, of the
 * release under test) driven over a line protocol, for the transactional queue workload.
 *
 * Built at set-up by targets/kafka/java_build.py (javac against the release's
 * kafka-clients, Gson and slf4j; cached per release) and driven by
 * targets/kafka/txn_java.py. Protocol (targets/kafka/java_protocol.py is the Python
 * side): one JSON object per line on stdin, one per line on stdout, answered in any order
 * and matched by "id".
 *
 *   request:  {"id": N, "op": OP, "session": S, ...arguments}
 *   answer:   {"id": N, "ok": true, "result": {...}}
 *          or {"id": N, "ok": false, "error": {"class": fully qualified exception class,
 *              "message", "causes": [class, ...], "retriable", "abortable", "fatal",
 *              "sync", "txn_state", "kafka_error"}}
 *
 * Each session (one producer and one consumer) runs its ops in order on a thread of its
 * own; sessions run side by side. Ops: hello, open, assign, subscribe, send, poll, seek,
 * begin, send_offsets, commit, abort, commit_offsets, info, close (a crash, answered
 * without waiting for the op in flight: ClientSession.crash), exit. The session and its ops
 * are ClientSession.java. Nothing but the protocol is written to stdout (System.out is
 * pointed at stderr; the client library's log goes to stderr through slf4j-simple).
 *
 * Errors: "retriable" is the client library's own word (RetriableException, and the
 * producer's TimeoutException/InterruptException on a transactional call, which its
 * javadoc says may be retried); "abortable" and "fatal" are the producer's transaction
 * manager's state after the error (hasAbortableError, hasFatalError), read by reflection
 * because the library does not publish them; "sync": the call threw before the record
 * was handed to the producer (send only). "txn_state": the transaction manager's state.
 * "kafka_error": Kafka's protocol name of the error (INVALID_RECORD, UNKNOWN_SERVER_ERROR...)
 * when the exception or one of its causes is exactly a class that Kafka's Errors table maps
 * an error code to, else null (a client-side TimeoutException shows as REQUEST_TIMED_OUT,
 * whose class it is).
 */

import com.google.gson.Gson;
import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;

import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.protocol.Errors;

public final class TxnClient {
    private static final Gson GSON = new Gson();
    private static PrintStream protocol;
    static final Map<String, ClientSession> SESSIONS = new ConcurrentHashMap<>();
    /** Kafka's protocol error name by the exact exception class its Errors table gives. */
    static final Map<Class<?>, String> ERROR_NAMES = errorNames();

    static Map<Class<?>, String> errorNames() {
        Map<Class<?>, String> out = new HashMap<>();
        for (Errors error : Errors.values()) {
            ApiException e = error.exception();
            if (e != null) {
                out.putIfAbsent(e.getClass(), error.name());
            }
        }
        return out;
    }

    /** The protocol name of the first of t and its causes whose class is in ERROR_NAMES, or null. */
    static String kafkaError(Throwable t) {
        int depth = 0;
        for (Throwable c = t; c != null && depth < 8; c = c.getCause(), depth++) {
            String name = ERROR_NAMES.get(c.getClass());
            if (name != null) {
                return name;
            }
        }
        return null;
    }

    /** A request failed before the client library was called (bad arguments, unknown session). */
    static final class ProtocolError extends RuntimeException {
        private static final long serialVersionUID = 1L;

        ProtocolError(String message) { super(message); }
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
        for (ClientSession s : SESSIONS.values()) {
            s.closeQuietly(0);
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
        ClientSession s;
        if (op.equals("open")) {
            s = new ClientSession(name);
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
        final ClientSession session = s;
        if (op.equals("close")) {
            // not behind the session's queue: a crash does not wait for the op in flight
            Thread t = new Thread(() -> answer(id, session.crash(req), null, null), "close-" + name);
            t.setDaemon(true);
            t.start();
            return;
        }
        session.thread.submit(() -> {
            try {
                answer(id, session.run(op, req), null, session);
            } catch (ClientSession.SyncSendError e) {
                answer(id, null, e.getCause(), session, true);
            } catch (Throwable e) {
                JsonObject error = describe(e, session, false);
                if (op.equals("open")) {
                    session.closeQuietly(0);      // before answering: the open may be retried at once
                }
                write(id, null, error);
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

    // -- answers ------------------------------------------------------------------------------

    static void answer(long id, JsonObject result, Throwable error, ClientSession s) {
        answer(id, result, error, s, false);
    }

    static void answer(long id, JsonObject result, Throwable error, ClientSession s, boolean sync) {
        write(id, result, error == null ? null : describe(error, s, sync));
    }

    /** One answer line: the result, or the error already described. */
    static void write(long id, JsonObject result, JsonObject error) {
        JsonObject out = new JsonObject();
        out.addProperty("id", id);
        out.addProperty("ok", error == null);
        if (error == null) {
            out.add("result", result == null ? new JsonObject() : result);
        } else {
            out.add("error", error);
        }
        String text = GSON.toJson(out);
        synchronized (TxnClient.class) {
            protocol.println(text);
            protocol.flush();
        }
    }

    static JsonObject describe(Throwable t, ClientSession s, boolean sync) {
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
        Object tm = s == null ? null : s.transactionManager();
        Object abortable = tm == null ? null : ClientSession.call(tm, "hasAbortableError");
        Object fatal = tm == null ? null : ClientSession.call(tm, "hasFatalError");
        out.addProperty("abortable", Boolean.TRUE.equals(abortable));
        out.addProperty("fatal", Boolean.TRUE.equals(fatal));
        out.addProperty("protocol", e instanceof ProtocolError);
        out.addProperty("sync", sync);
        Object state = tm == null ? null : ClientSession.field(tm, "currentState");
        out.addProperty("txn_state", state == null ? null : state.toString());
        out.addProperty("kafka_error", kafkaError(e));
        return out;
    }
}
