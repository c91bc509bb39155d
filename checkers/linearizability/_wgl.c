/*
 * _wgl: the search core of the linearizability checker.
 *
 * Wing & Gong's search for a linearization, with Lowe's memoization of
 * (linearized set, model state) pairs, exactly as porcupine's checkSingle
 * runs it: a doubly-linked list of call and return entries in time order; at
 * each call entry try the op against the model and, if it is legal and the
 * resulting (set, state) pair is new, lift the op out of the list; at a
 * return entry whose op is not yet linearized, backtrack.
 *
 * What differs from porcupine is representation, not the search:
 *   - model states are interned Python objects, named by int ids; the model's
 *     step function (Python) is called once per (op, state id) and its answer
 *     kept in a transition table, so the search loop itself never enters
 *     Python after warm-up;
 *   - a state is a vector of K component states; each op reads and writes
 *     exactly one component (K = 1 for most models; a key-value map searched
 *     without partitioning has one component per key). The memoized pair is
 *     still (linearized set, whole state vector);
 *   - register and key-value steps (read, write, cas, append) can be given
 *     as "native" kinds that C runs without Python; an append's result is a
 *     chain state (parent state, op), materialized only when a read compares;
 *   - the linearized set is a bitset with an incremental Zobrist hash, and
 *     cache entries live in an arena (bytes counted, so the caller can bound
 *     memory).
 *
 * An op that never returned (crashed, Jepsen's info) returns after every
 * other event; reaching such a return means every op that did complete is
 * linearized, and the crashed ops still unplaced simply never took effect,
 * so the history is linearizable (porcupine would go on to place them at
 * the end; for models where an unknown outcome can always be placed last,
 * such as registers, the verdict is the same).
 *
 * The caller drives the search in slices (run(max_steps)) so that many
 * partitions can be searched interleaved, stopped at the first illegal one,
 * timed out, or abandoned when memory runs short.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

/* native op kinds: register and key-value steps done in C (see the module docs) */
#define K_PY 0          /* call the model's step in Python */
#define K_READ 1        /* legal iff value == a */
#define K_READ_ANY 2    /* legal (output unknown) */
#define K_WRITE 3       /* -> a */
#define K_CAS 4         /* legal iff value == a; -> b */
#define K_CAS_FALSE 5   /* legal iff value != a */
#define K_CAS_ANY 6     /* value == a ? -> b : unchanged */
#define K_APPEND 7      /* -> value + a (nil counts as empty) */

#define ST_RUNNING 0
#define ST_OK 1
#define ST_ILLEGAL 2

static inline uint64_t mix64(uint64_t z) {
    /* splitmix64 finalizer */
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline uint64_t comp_hash(uint32_t comp, int32_t sid) {
    return mix64(((uint64_t)comp << 32) ^ (uint32_t)sid ^ 0x5bd1e9955bd1e995ULL);
}

/* ---- transition table: (op, state id) -> next state id, or -1 illegal ---- */
typedef struct {
    uint64_t key;     /* (op << 32 | sid) + 1; 0 = empty */
    int32_t val;
} TransSlot;

typedef struct {
    TransSlot *slots;
    size_t cap, len;
} TransTable;

static int trans_init(TransTable *t, size_t cap) {
    t->cap = cap; t->len = 0;
    t->slots = PyMem_Calloc(cap, sizeof(TransSlot));
    return t->slots ? 0 : -1;
}

static void trans_free(TransTable *t) {
    PyMem_Free(t->slots);
    t->slots = NULL;
}

/* Home slot of (op << 32 | sid) + 1: hash the state, add the op. The search
 * tries op after op from one state, and concurrent ops have nearby ids, so
 * one state's transitions share a few cache lines. */
static inline size_t trans_home(uint64_t key, size_t mask) {
    uint64_t k = key - 1;
    return (size_t)(mix64(k & 0xffffffffULL) + (k >> 32)) & mask;
}

/* 1 and the slot holding key, or 0 and the empty slot where it would go */
static inline int trans_find(TransTable *t, uint64_t key, size_t *slot) {
    size_t mask = t->cap - 1, i = trans_home(key, mask);
    for (;;) {
        uint64_t k = t->slots[i].key;
        if (k == key) { *slot = i; return 1; }
        if (k == 0) { *slot = i; return 0; }
        i = (i + 1) & mask;
    }
}

/* Insert key (absent) -> val; `slot` is where trans_find said it would go. */
static int trans_put(TransTable *t, uint64_t key, int32_t val, size_t slot) {
    if ((t->len + 1) * 2 > t->cap) {
        TransTable n;
        if (trans_init(&n, t->cap * 2) < 0) return -1;
        size_t mask = n.cap - 1;
        for (size_t i = 0; i < t->cap; i++) {
            if (t->slots[i].key) {
                size_t j = trans_home(t->slots[i].key, mask);
                while (n.slots[j].key) j = (j + 1) & mask;
                n.slots[j] = t->slots[i]; n.len++;
            }
        }
        trans_free(t);
        *t = n;
        trans_find(t, key, &slot);
    }
    t->slots[slot].key = key; t->slots[slot].val = val; t->len++;
    return 0;
}

/* ---- the memo cache: set of (bitset, state vector) ----
 * Open addressing over 8-byte slots: the high 32 bits are a tag from the
 * entry's hash, the low 32 bits the entry's number + 1 (0 = empty). Entries
 * sit in an arena in insertion order, each its 64-bit hash then its ew
 * words, so a probe touches one slot and, only when the tag matches, one
 * entry; growing re-reads the arena sequentially. */
typedef struct {
    uint64_t *slots;
    size_t cap, len;
    size_t ew;         /* words per entry, without the hash */
    uint64_t *arena;
    size_t arena_cap;  /* in entries */
} Cache;

static void cache_free(Cache *c) {
    PyMem_Free(c->slots); PyMem_Free(c->arena);
    c->slots = NULL; c->arena = NULL;
}

static int cache_init(Cache *c, size_t cap, size_t ew) {
    c->cap = cap; c->len = 0; c->ew = ew;
    c->slots = PyMem_Calloc(cap, sizeof(uint64_t));
    c->arena_cap = cap / 2;
    c->arena = PyMem_Malloc(c->arena_cap * (ew + 1) * sizeof(uint64_t));
    return (c->slots && c->arena) ? 0 : -1;
}

static inline size_t cache_home(uint64_t h, size_t mask) { return (size_t)h & mask; }

static int cache_grow(Cache *c) {
    size_t ncap = c->cap * 2;
    uint64_t *ns = PyMem_Calloc(ncap, sizeof(uint64_t));
    if (!ns) return -1;
    size_t mask = ncap - 1, stride = c->ew + 1;
    for (size_t idx = 0; idx < c->len; idx++) {
        uint64_t h = c->arena[idx * stride];
        size_t j = cache_home(h, mask);
        while (ns[j]) j = (j + 1) & mask;
        ns[j] = (h & 0xffffffff00000000ULL) | (uint64_t)(idx + 1);
    }
    PyMem_Free(c->slots);
    c->slots = ns; c->cap = ncap;
    return 0;
}

/* Insert the entry words[0..ew) with hash h unless present.
 * Returns 1 if inserted, 0 if it was already there, -1 on memory error. */
static int cache_add(Cache *c, uint64_t h, const uint64_t *words) {
    const size_t ew = c->ew, stride = ew + 1;
    uint64_t tag = h & 0xffffffff00000000ULL;
    size_t mask = c->cap - 1, i = cache_home(h, mask);
    for (;;) {
        uint64_t sl = c->slots[i];
        if (sl == 0) break;
        if ((sl & 0xffffffff00000000ULL) == tag) {
            const uint64_t *e = c->arena + ((sl & 0xffffffffULL) - 1) * stride;
            if (e[0] == h && memcmp(e + 1, words, ew * sizeof(uint64_t)) == 0) return 0;
        }
        i = (i + 1) & mask;
    }
    if (c->len >= 0xfffffffeULL) return -1;
    if (c->len >= c->arena_cap) {
        size_t ncap = c->arena_cap * 2;
        uint64_t *na = PyMem_Realloc(c->arena, ncap * stride * sizeof(uint64_t));
        if (!na) return -1;
        c->arena = na; c->arena_cap = ncap;
    }
    uint64_t *e = c->arena + c->len * stride;
    e[0] = h;
    memcpy(e + 1, words, ew * sizeof(uint64_t));
    c->slots[i] = tag | (uint64_t)(c->len + 1);
    c->len++;
    if (c->len * 2 > c->cap && cache_grow(c) < 0) return -1;
    return 1;
}

typedef struct {
    PyObject_HEAD
    /* history */
    Py_ssize_t n;          /* ops */
    Py_ssize_t K;          /* components */
    Py_ssize_t W;          /* bitset words */
    Py_ssize_t SW;         /* state-vector words */
    Py_ssize_t EW;         /* entry words = W + SW */
    int32_t *comp;         /* comp[op] */
    int8_t *open_end;      /* per op: 1 if it never returned (crashed, open to +infinity) */
    /* linked list: node 0 is the head; nodes 1..2n are entries */
    int32_t *next, *prev, *match, *opof;
    /* search state */
    int32_t cur;           /* current node */
    uint64_t *lin;         /* linearized bitset, W words, then the state vector */
    int32_t *state;        /* K state ids (points into lin + W) */
    uint64_t zob;          /* Zobrist hash of the bitset */
    uint64_t shash;        /* hash of the state vector */
    uint64_t *zkey;        /* per-op random keys */
    int32_t *stk_node, *stk_old;   /* calls stack: node, previous component state */
    Py_ssize_t depth;
    int status;
    /* model */
    PyObject *step;        /* callable(state, op_id) -> new state or ILLEGAL */
    PyObject *illegal;     /* the ILLEGAL sentinel */
    PyObject *intern;      /* dict: state -> id (atoms only) */
    PyObject *states;      /* list: id -> state (atoms; None placeholder for chains) */
    int8_t *nkind;         /* native kind per op (K_PY: Python step) */
    int32_t *na, *nb;      /* native arguments: state ids of interned values */
    int32_t *st_parent;    /* per state: -1 for an atom, else the state appended to */
    int32_t *st_op;        /* per chain state: the append op */
    PyObject **content;    /* per chain state: materialized value, or NULL */
    size_t st_cap;
    TransTable trans;
    int32_t *memo_sid, *memo_out;  /* per op: the last (state -> next) looked up */
    Cache cache;
    /* statistics */
    unsigned long long steps, step_calls, backtracks;
    /* explanation: longest partial linearization */
    int explain;
    Py_ssize_t best_len;
    Py_ssize_t best_done;  /* completed (not crashed) ops in best_seq */
    int32_t *best_seq;     /* op ids */
    int32_t best_stuck;    /* op that could not be placed after best_seq, or -1 */
    /* per-op longest prefix containing it (porcupine's "largest") */
    int32_t *longest_len;  /* per op */
    int32_t *longest_ref;  /* per op: index into seqs */
    PyObject *seqs;        /* list of tuples of op ids */
} Search;

/* ---- model access ---- */

static int note_state(Search *s, int32_t parent, int32_t op) {
    size_t n = (size_t)PyList_GET_SIZE(s->states);  /* already appended */
    if (n > s->st_cap) {
        size_t ncap = s->st_cap ? s->st_cap * 2 : 64;
        while (ncap < n) ncap *= 2;
        int32_t *p = PyMem_Realloc(s->st_parent, ncap * sizeof(int32_t));
        if (!p) { PyErr_NoMemory(); return -1; }
        s->st_parent = p;
        int32_t *o = PyMem_Realloc(s->st_op, ncap * sizeof(int32_t));
        if (!o) { PyErr_NoMemory(); return -1; }
        s->st_op = o;
        PyObject **c = PyMem_Realloc(s->content, ncap * sizeof(PyObject *));
        if (!c) { PyErr_NoMemory(); return -1; }
        s->content = c;
        for (size_t i = s->st_cap; i < ncap; i++) s->content[i] = NULL;
        s->st_cap = ncap;
    }
    s->st_parent[n - 1] = parent;
    s->st_op[n - 1] = op;
    return 0;
}

/* Intern a state object; returns its id or -1 on error. */
static int32_t intern_state(Search *s, PyObject *st) {
    PyObject *id = PyDict_GetItemWithError(s->intern, st);
    if (id) return (int32_t)PyLong_AsLong(id);
    if (PyErr_Occurred()) return -1;
    Py_ssize_t n = PyList_GET_SIZE(s->states);
    if (n >= INT32_MAX) { PyErr_SetString(PyExc_MemoryError, "too many model states"); return -1; }
    PyObject *nid = PyLong_FromSsize_t(n);
    if (!nid) return -1;
    if (PyDict_SetItem(s->intern, st, nid) < 0) { Py_DECREF(nid); return -1; }
    Py_DECREF(nid);
    if (PyList_Append(s->states, st) < 0) return -1;
    if (note_state(s, -1, -1) < 0) return -1;
    return (int32_t)n;
}

/* A chain state: the value of `parent` with op's argument appended. */
static int32_t new_chain(Search *s, int32_t parent, int32_t op) {
    Py_ssize_t n = PyList_GET_SIZE(s->states);
    if (n >= INT32_MAX) { PyErr_SetString(PyExc_MemoryError, "too many model states"); return -1; }
    if (PyList_Append(s->states, Py_None) < 0) return -1;
    if (note_state(s, parent, op) < 0) return -1;
    return (int32_t)n;
}

/* The value of state sid (a borrowed reference), materializing chains. */
static PyObject *state_value(Search *s, int32_t sid) {
    if (s->st_parent[sid] < 0) return PyList_GET_ITEM(s->states, sid);
    if (s->content[sid]) return s->content[sid];
    /* walk up to a materialized ancestor, then build forward */
    int32_t top = sid;
    Py_ssize_t depth = 0;
    while (s->st_parent[top] >= 0 && !s->content[top]) { top = s->st_parent[top]; depth++; }
    int32_t *path = PyMem_Malloc((depth + 1) * sizeof(int32_t));
    if (!path) { PyErr_NoMemory(); return NULL; }
    Py_ssize_t k = 0;
    for (int32_t x = sid; x != top; x = s->st_parent[x]) path[k++] = x;
    PyObject *acc = s->st_parent[top] < 0 ? PyList_GET_ITEM(s->states, top) : s->content[top];
    for (Py_ssize_t i = k - 1; i >= 0; i--) {
        int32_t x = path[i];
        PyObject *suffix = PyList_GET_ITEM(s->states, s->na[s->st_op[x]]);
        PyObject *v = acc == Py_None ? (Py_INCREF(suffix), suffix) : PyNumber_Add(acc, suffix);
        if (!v) { PyMem_Free(path); return NULL; }
        s->content[x] = v;  /* owned */
        acc = v;
    }
    PyMem_Free(path);
    return acc;
}

/* Chain state sid == the string v, compared suffix by suffix from the end
 * without building the chain's string: 1, 0, -1 on error, -3 when some part
 * is not a str (the caller then materializes). */
static int chain_equals_str(Search *s, int32_t sid, PyObject *v) {
    Py_ssize_t end = PyUnicode_GET_LENGTH(v);
    int32_t x = sid;
    while (s->st_parent[x] >= 0) {
        PyObject *c = s->content[x];
        if (c) {
            if (!PyUnicode_Check(c)) return -3;
            return PyUnicode_GET_LENGTH(c) == end && (end == 0 || PyUnicode_Tailmatch(v, c, 0, end, -1) == 1);
        }
        PyObject *suf = PyList_GET_ITEM(s->states, s->na[s->st_op[x]]);
        if (!PyUnicode_Check(suf)) return -3;
        Py_ssize_t L = PyUnicode_GET_LENGTH(suf);
        if (L > end) return 0;
        if (L) {
            Py_ssize_t r = PyUnicode_Tailmatch(v, suf, end - L, end, 1);
            if (r != 1) return r < 0 ? -1 : 0;
        }
        end -= L;
        x = s->st_parent[x];
    }
    PyObject *a = PyList_GET_ITEM(s->states, x);
    if (a == Py_None) return end == 0;
    if (!PyUnicode_Check(a)) return -3;
    return PyUnicode_GET_LENGTH(a) == end && (end == 0 || PyUnicode_Tailmatch(v, a, 0, end, -1) == 1);
}

/* value(sid) == value(aid), aid an atom: 1, 0, or -1 on error */
static int state_equals(Search *s, int32_t sid, int32_t aid) {
    if (sid == aid) return 1;
    if (s->st_parent[sid] < 0) return 0;  /* atoms are interned: distinct ids differ */
    PyObject *target = PyList_GET_ITEM(s->states, aid);
    if (PyUnicode_Check(target)) {
        int r = chain_equals_str(s, sid, target);
        if (r != -3) return r;
    }
    PyObject *v = state_value(s, sid);
    if (!v) return -1;
    return PyObject_RichCompareBool(v, PyList_GET_ITEM(s->states, aid), Py_EQ);
}

/* next state id of op from state sid; -1 = illegal; -2 = Python error */
static int32_t transition_slow(Search *s, int32_t op, int32_t sid);

/* next state id of op from state sid; -1 = illegal; -2 = Python error.
 * A one-entry memo per op sits in front of the transition table: the DFS
 * retries an op from the state it last tried it in far more often than not,
 * and the memo is small enough to stay in cache when the table is not. */
static inline int32_t transition(Search *s, int32_t op, int32_t sid) {
    if (s->memo_sid[op] == sid) return s->memo_out[op];
    int32_t out = transition_slow(s, op, sid);
    if (out >= -1) { s->memo_sid[op] = sid; s->memo_out[op] = out; }
    return out;
}

static int32_t transition_slow(Search *s, int32_t op, int32_t sid) {
    uint64_t key = (((uint64_t)(uint32_t)op << 32) | (uint32_t)sid) + 1;
    int32_t out;
    size_t slot;
    if (trans_find(&s->trans, key, &slot)) return s->trans.slots[slot].val;
    int kind = s->nkind ? s->nkind[op] : K_PY;
    if (kind != K_PY) {
        int eq;
        switch (kind) {
        case K_READ: eq = state_equals(s, sid, s->na[op]); out = eq > 0 ? sid : -1; break;
        case K_READ_ANY: eq = 0; out = sid; break;
        case K_WRITE: eq = 0; out = s->na[op]; break;
        case K_CAS: eq = state_equals(s, sid, s->na[op]); out = eq > 0 ? s->nb[op] : -1; break;
        case K_CAS_FALSE: eq = state_equals(s, sid, s->na[op]); out = eq > 0 ? -1 : sid; break;
        case K_CAS_ANY: eq = state_equals(s, sid, s->na[op]); out = eq > 0 ? s->nb[op] : sid; break;
        case K_APPEND: eq = 0; out = new_chain(s, sid, op); if (out < 0) return -2; break;
        default: PyErr_Format(PyExc_ValueError, "op %d has unknown native kind %d", op, kind); return -2;
        }
        if (eq < 0) return -2;
        if (trans_put(&s->trans, key, out, slot) < 0) { PyErr_NoMemory(); return -2; }
        return out;
    }
    PyObject *st = state_value(s, sid);
    if (!st) return -2;
    PyObject *r = PyObject_CallFunction(s->step, "On", st, (Py_ssize_t)op);
    if (!r) return -2;
    s->step_calls++;
    if (r == s->illegal) out = -1;
    else {
        out = intern_state(s, r);
        if (out < 0) { Py_DECREF(r); return -2; }
    }
    Py_DECREF(r);
    if (trans_put(&s->trans, key, out, slot) < 0) { PyErr_NoMemory(); return -2; }
    return out;
}

/* ---- explanation bookkeeping (only when explain is on) ---- */
static int record_partial(Search *s, int32_t stuck_op) {
    Py_ssize_t d = s->depth, done = 0;
    for (Py_ssize_t i = 0; i < d; i++) done += !s->open_end[s->opof[s->stk_node[i]]];
    /* The best prefix to show places the most ops that completed: a crashed
       op placed early (it may or may not have happened) explains nothing. */
    if (done > s->best_done || (done == s->best_done && d < s->best_len)) {
        s->best_len = d;
        s->best_done = done;
        for (Py_ssize_t i = 0; i < d; i++) {
            int32_t op = s->opof[s->stk_node[i]];
            s->best_seq[i] = op;
        }
        s->best_stuck = stuck_op;
    }
    /* porcupine's per-op longest prefix */
    PyObject *seq = NULL;
    Py_ssize_t ref = -1;
    for (Py_ssize_t i = 0; i < d; i++) {
        int32_t op = s->opof[s->stk_node[i]];
        if (s->longest_len[op] < d) {
            if (!seq) {
                seq = PyTuple_New(d);
                if (!seq) return -1;
                for (Py_ssize_t j = 0; j < d; j++)
                    PyTuple_SET_ITEM(seq, j, PyLong_FromLong(s->opof[s->stk_node[j]]));
                ref = PyList_GET_SIZE(s->seqs);
                if (PyList_Append(s->seqs, seq) < 0) { Py_DECREF(seq); return -1; }
                Py_DECREF(seq);
            }
            s->longest_len[op] = (int32_t)d;
            s->longest_ref[op] = (int32_t)ref;
        }
    }
    return 0;
}

/* ---- the search ---- */

static inline void lift(Search *s, int32_t e) {
    s->next[s->prev[e]] = s->next[e];
    if (s->next[e] >= 0) s->prev[s->next[e]] = s->prev[e];
    int32_t m = s->match[e];
    s->next[s->prev[m]] = s->next[m];
    if (s->next[m] >= 0) s->prev[s->next[m]] = s->prev[m];
}

static inline void unlift(Search *s, int32_t e) {
    int32_t m = s->match[e];
    s->next[s->prev[m]] = m;
    if (s->next[m] >= 0) s->prev[s->next[m]] = m;
    s->next[s->prev[e]] = e;
    if (s->next[e] >= 0) s->prev[s->next[e]] = e;
}

static PyObject *Search_run(Search *s, PyObject *args) {
    long long max_steps;
    if (!PyArg_ParseTuple(args, "L", &max_steps)) return NULL;
    if (s->status != ST_RUNNING) return PyLong_FromLong(s->status);
    int32_t e = s->cur;
    long long budget = max_steps;
    while (budget-- > 0) {
        if (s->next[0] < 0) { s->status = ST_OK; break; }
        if (e < 0) {
            /* fell off the end of the list without linearizing everything:
               cannot happen, since every call has its return after it */
            PyErr_SetString(PyExc_RuntimeError, "wgl: ran off the entry list");
            return NULL;
        }
        s->steps++;
        if (s->match[e] >= 0) {
            /* call entry */
            int32_t op = s->opof[e];
            int32_t c = s->comp[op];
            int32_t old = s->state[c];
            int32_t nid = transition(s, op, old);
            if (nid == -2) { s->cur = e; return NULL; }
            if (nid >= 0) {
                uint64_t zob = s->zob ^ s->zkey[op];
                uint64_t sh = s->shash ^ comp_hash((uint32_t)c, old) ^ comp_hash((uint32_t)c, nid);
                s->lin[op >> 6] |= (1ULL << (op & 63));
                s->state[c] = nid;
                int r = cache_add(&s->cache, zob ^ sh, s->lin);
                if (r < 0) { s->cur = e; return PyErr_NoMemory(); }
                if (r == 1) {
                    s->stk_node[s->depth] = e;
                    s->stk_old[s->depth] = old;
                    s->depth++;
                    s->zob = zob; s->shash = sh;
                    lift(s, e);
                    e = s->next[0];
                    continue;
                }
                s->lin[op >> 6] &= ~(1ULL << (op & 63));
                s->state[c] = old;
            }
            e = s->next[e];
        } else {
            /* return entry of an op not linearized yet */
            if (s->open_end[s->opof[e]]) {
                /* Only returns at +infinity remain: every op that completed is
                   linearized, and the crashed ops still open never took effect. */
                s->status = ST_OK;
                break;
            }
            /* backtrack */
            if (s->explain && record_partial(s, s->opof[e]) < 0) { s->cur = e; return NULL; }
            if (s->depth == 0) { s->status = ST_ILLEGAL; break; }
            s->backtracks++;
            s->depth--;
            int32_t top = s->stk_node[s->depth];
            int32_t op = s->opof[top];
            int32_t c = s->comp[op];
            int32_t old = s->stk_old[s->depth];
            s->zob ^= s->zkey[op];
            s->shash ^= comp_hash((uint32_t)c, s->state[c]) ^ comp_hash((uint32_t)c, old);
            s->state[c] = old;
            s->lin[op >> 6] &= ~(1ULL << (op & 63));
            unlift(s, top);
            e = s->next[top];
        }
    }
    s->cur = e;
    return PyLong_FromLong(s->status);
}

/* Search(events, comp, initial_states, step, illegal, explain=False)
 *   events: sequence of ints, the 2n entries in time order, each op*2 + is_return
 *   comp: sequence of n ints, the component each op acts on (0..K-1)
 *   initial_states: sequence of K objects, each component's initial state
 *   step: callable(state, op) -> next state, or `illegal` */
static int Search_init(Search *s, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"events", "comp", "initial_states", "step", "illegal", "explain", "native",
                             "open_end", NULL};
    PyObject *events, *comp, *inits, *step, *illegal, *native = Py_None, *open_end = Py_None;
    int explain = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOOO|pOO", kwlist, &events, &comp, &inits,
                                     &step, &illegal, &explain, &native, &open_end))
        return -1;
    if (s->comp) { PyErr_SetString(PyExc_RuntimeError, "Search already initialised"); return -1; }
    PyObject *ev = PySequence_Fast(events, "events must be a sequence of ints");
    if (!ev) return -1;
    PyObject *cp = PySequence_Fast(comp, "comp must be a sequence of ints");
    if (!cp) { Py_DECREF(ev); return -1; }
    PyObject *is = PySequence_Fast(inits, "initial_states must be a sequence");
    if (!is) { Py_DECREF(ev); Py_DECREF(cp); return -1; }
    int rc = -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(cp);
    Py_ssize_t K = PySequence_Fast_GET_SIZE(is);
    if (PySequence_Fast_GET_SIZE(ev) != 2 * n) {
        PyErr_Format(PyExc_ValueError, "events has %zd entries, expected 2 * %zd ops", PySequence_Fast_GET_SIZE(ev), n);
        goto out;
    }
    if (K < 1) { PyErr_SetString(PyExc_ValueError, "initial_states must hold at least one component"); goto out; }
    if (n >= (1 << 29)) { PyErr_SetString(PyExc_ValueError, "too many ops"); goto out; }
    if (!PyCallable_Check(step)) { PyErr_SetString(PyExc_TypeError, "step must be callable"); goto out; }
    s->n = n; s->K = K;
    s->W = (n + 63) / 64; if (s->W == 0) s->W = 1;
    s->SW = (K + 1) / 2;
    s->EW = s->W + s->SW;
    s->comp = PyMem_Calloc(n ? n : 1, sizeof(int32_t));
    s->open_end = PyMem_Calloc(n ? n : 1, sizeof(int8_t));
    if (!s->open_end) { PyErr_NoMemory(); goto out; }
    if (open_end != Py_None) {
        PyObject *oe = PySequence_Fast(open_end, "open_end must be a sequence of op ids");
        if (!oe) goto out;
        for (Py_ssize_t k = 0; k < PySequence_Fast_GET_SIZE(oe); k++) {
            long op = PyLong_AsLong(PySequence_Fast_GET_ITEM(oe, k));
            if (op == -1 && PyErr_Occurred()) { Py_DECREF(oe); goto out; }
            if (op < 0 || op >= n) { PyErr_Format(PyExc_ValueError, "open_end names op %ld, not in [0, %zd)", op, n); Py_DECREF(oe); goto out; }
            s->open_end[op] = 1;
        }
        Py_DECREF(oe);
    }
    s->next = PyMem_Malloc((2 * n + 1) * sizeof(int32_t));
    s->prev = PyMem_Malloc((2 * n + 1) * sizeof(int32_t));
    s->match = PyMem_Malloc((2 * n + 1) * sizeof(int32_t));
    s->opof = PyMem_Malloc((2 * n + 1) * sizeof(int32_t));
    s->lin = PyMem_Calloc(s->EW, sizeof(uint64_t));
    s->zkey = PyMem_Malloc((n ? n : 1) * sizeof(uint64_t));
    s->memo_sid = PyMem_Malloc((n ? n : 1) * sizeof(int32_t));
    s->memo_out = PyMem_Malloc((n ? n : 1) * sizeof(int32_t));
    if (!s->memo_sid || !s->memo_out) { PyErr_NoMemory(); goto out; }
    for (Py_ssize_t i = 0; i < n; i++) s->memo_sid[i] = -1;
    s->stk_node = PyMem_Malloc((n ? n : 1) * sizeof(int32_t));
    s->stk_old = PyMem_Malloc((n ? n : 1) * sizeof(int32_t));
    if (!s->comp || !s->next || !s->prev || !s->match || !s->opof || !s->lin || !s->zkey ||
        !s->stk_node || !s->stk_old) { PyErr_NoMemory(); goto out; }
    s->state = (int32_t *)(s->lin + s->W);
    for (Py_ssize_t i = 0; i < n; i++) {
        long c = PyLong_AsLong(PySequence_Fast_GET_ITEM(cp, i));
        if (c == -1 && PyErr_Occurred()) goto out;
        if (c < 0 || c >= K) { PyErr_Format(PyExc_ValueError, "comp[%zd] = %ld is not in [0, %zd)", i, c, K); goto out; }
        s->comp[i] = (int32_t)c;
        s->zkey[i] = mix64((uint64_t)i * 0x2545f4914f6cdd1dULL + 0x1234567ULL);
    }
    /* linked list in event order; the return node of op i must follow its call */
    int32_t *call_node = PyMem_Malloc((n ? n : 1) * sizeof(int32_t));
    if (!call_node) { PyErr_NoMemory(); goto out; }
    for (Py_ssize_t i = 0; i < n; i++) call_node[i] = -1;
    s->next[0] = 2 * n >= 1 ? 1 : -1; s->prev[0] = -1; s->match[0] = -1; s->opof[0] = -1;
    for (Py_ssize_t k = 0; k < 2 * n; k++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(ev, k));
        if (v == -1 && PyErr_Occurred()) { PyMem_Free(call_node); goto out; }
        long op = v >> 1; int is_ret = (int)(v & 1);
        if (v < 0 || op >= n) { PyErr_Format(PyExc_ValueError, "events[%zd] = %ld names no op", k, v); PyMem_Free(call_node); goto out; }
        int32_t node = (int32_t)(k + 1);
        s->opof[node] = (int32_t)op;
        s->prev[node] = node - 1;
        s->next[node] = (k + 1 < 2 * n) ? node + 1 : -1;
        if (!is_ret) {
            if (call_node[op] != -1) { PyErr_Format(PyExc_ValueError, "op %ld has two calls", op); PyMem_Free(call_node); goto out; }
            call_node[op] = node;
            s->match[node] = -2;  /* filled at its return */
        } else {
            if (call_node[op] < 0) { PyErr_Format(PyExc_ValueError, "op %ld returns before it is called", op); PyMem_Free(call_node); goto out; }
            if (s->match[call_node[op]] != -2) { PyErr_Format(PyExc_ValueError, "op %ld has two returns", op); PyMem_Free(call_node); goto out; }
            s->match[call_node[op]] = node;
            s->match[node] = -1;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (call_node[i] < 0 || s->match[call_node[i]] < 0) {
            PyErr_Format(PyExc_ValueError, "op %zd lacks its call or return event", i);
            PyMem_Free(call_node); goto out;
        }
    }
    PyMem_Free(call_node);
    s->step = step; Py_INCREF(step);
    s->illegal = illegal; Py_INCREF(illegal);
    s->intern = PyDict_New();
    s->states = PyList_New(0);
    if (!s->intern || !s->states) goto out;
    s->shash = 0;
    for (Py_ssize_t c = 0; c < K; c++) {
        int32_t sid = intern_state(s, PySequence_Fast_GET_ITEM(is, c));
        if (sid < 0) goto out;
        s->state[c] = sid;
        s->shash ^= comp_hash((uint32_t)c, sid);
    }
    if (native != Py_None) {
        PyObject *nv = PySequence_Fast(native, "native must be a sequence of (kind, a, b) or None");
        if (!nv) goto out;
        if (PySequence_Fast_GET_SIZE(nv) != n) {
            PyErr_Format(PyExc_ValueError, "native has %zd entries for %zd ops", PySequence_Fast_GET_SIZE(nv), n);
            Py_DECREF(nv); goto out;
        }
        s->nkind = PyMem_Calloc(n ? n : 1, sizeof(int8_t));
        s->na = PyMem_Calloc(n ? n : 1, sizeof(int32_t));
        s->nb = PyMem_Calloc(n ? n : 1, sizeof(int32_t));
        if (!s->nkind || !s->na || !s->nb) { Py_DECREF(nv); PyErr_NoMemory(); goto out; }
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *t = PySequence_Fast_GET_ITEM(nv, i);
            if (t == Py_None) continue;
            int kind; PyObject *a, *b;
            if (!PyArg_ParseTuple(t, "iOO", &kind, &a, &b)) { Py_DECREF(nv); goto out; }
            if (kind < K_PY || kind > K_APPEND) {
                PyErr_Format(PyExc_ValueError, "native[%zd]: unknown kind %d", i, kind);
                Py_DECREF(nv); goto out;
            }
            int32_t ia = intern_state(s, a), ib = intern_state(s, b);
            if (ia < 0 || ib < 0) { Py_DECREF(nv); goto out; }
            s->nkind[i] = (int8_t)kind; s->na[i] = ia; s->nb[i] = ib;
        }
        Py_DECREF(nv);
    }
    size_t cap0 = 1024;
    while (cap0 < (size_t)n * 32 && cap0 < (1u << 20)) cap0 *= 2;  /* fewer regrowths */
    if (trans_init(&s->trans, cap0) < 0) { PyErr_NoMemory(); goto out; }
    if (cache_init(&s->cache, cap0, (size_t)s->EW) < 0) { PyErr_NoMemory(); goto out; }
    s->cur = s->next[0];
    s->status = ST_RUNNING;
    s->explain = explain;
    s->best_len = -1; s->best_done = -1; s->best_stuck = -1;
    if (explain) {
        s->best_seq = PyMem_Malloc((n ? n : 1) * sizeof(int32_t));
        s->longest_len = PyMem_Calloc(n ? n : 1, sizeof(int32_t));
        s->longest_ref = PyMem_Malloc((n ? n : 1) * sizeof(int32_t));
        s->seqs = PyList_New(0);
        if (!s->best_seq || !s->longest_len ||
            !s->longest_ref || !s->seqs) { PyErr_NoMemory(); goto out; }
        for (Py_ssize_t i = 0; i < n; i++) s->longest_ref[i] = -1;
    }
    rc = 0;
out:
    Py_DECREF(ev); Py_DECREF(cp); Py_DECREF(is);
    return rc;
}

static void Search_dealloc(Search *s) {
    PyMem_Free(s->comp); PyMem_Free(s->open_end); PyMem_Free(s->next); PyMem_Free(s->prev); PyMem_Free(s->match);
    PyMem_Free(s->opof); PyMem_Free(s->lin); PyMem_Free(s->zkey);
    PyMem_Free(s->memo_sid); PyMem_Free(s->memo_out);
    PyMem_Free(s->stk_node); PyMem_Free(s->stk_old);
    PyMem_Free(s->best_seq); 
    PyMem_Free(s->longest_len); PyMem_Free(s->longest_ref);
    trans_free(&s->trans);
    cache_free(&s->cache);
    PyMem_Free(s->nkind); PyMem_Free(s->na); PyMem_Free(s->nb);
    if (s->content) for (size_t i = 0; i < s->st_cap; i++) Py_XDECREF(s->content[i]);
    PyMem_Free(s->content); PyMem_Free(s->st_parent); PyMem_Free(s->st_op);
    Py_XDECREF(s->step); Py_XDECREF(s->illegal); Py_XDECREF(s->intern);
    Py_XDECREF(s->states); Py_XDECREF(s->seqs);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static PyObject *Search_memory(Search *s, PyObject *unused) {
    size_t b = s->cache.cap * 8 + s->cache.arena_cap * (s->cache.ew + 1) * 8 + s->trans.cap * sizeof(TransSlot)
             + (size_t)s->n * 40 + (size_t)s->EW * 8;
    return PyLong_FromSize_t(b);
}

static PyObject *Search_explanation(Search *s, PyObject *unused) {
    if (!s->explain) { PyErr_SetString(PyExc_RuntimeError, "Search was created without explain=True"); return NULL; }
    Py_ssize_t d = s->best_len < 0 ? 0 : s->best_len;
    PyObject *seq = PyList_New(d), *longest = PyDict_New();
    if (!seq || !longest) goto err;
    for (Py_ssize_t i = 0; i < d; i++) PyList_SET_ITEM(seq, i, PyLong_FromLong(s->best_seq[i]));
    for (Py_ssize_t i = 0; i < s->n; i++) {
        if (s->longest_ref[i] >= 0) {
            PyObject *k = PyLong_FromSsize_t(i), *v = PyLong_FromLong(s->longest_ref[i]);
            if (!k || !v || PyDict_SetItem(longest, k, v) < 0) { Py_XDECREF(k); Py_XDECREF(v); goto err; }
            Py_DECREF(k); Py_DECREF(v);
        }
    }
    return Py_BuildValue("{sNsisNsO}", "prefix", seq, "stuck", (int)s->best_stuck,
                         "largest", longest, "linearizations", s->seqs);
err:
    Py_XDECREF(seq); Py_XDECREF(longest);
    return NULL;
}

static PyObject *Search_stats(Search *s, PyObject *unused) {
    return Py_BuildValue("{sKsKsKsnsnsn}", "steps", s->steps, "step_calls", s->step_calls,
                         "backtracks", s->backtracks, "cache_entries", (Py_ssize_t)s->cache.len,
                         "states", PyList_GET_SIZE(s->states), "depth", s->depth);
}

static PyMethodDef Search_methods[] = {
    {"run", (PyCFunction)Search_run, METH_VARARGS,
     "run(max_steps) -> status: 0 still running, 1 linearizable, 2 not linearizable.\n"
     "Does at most max_steps search steps. Raises what the model's step raises, or MemoryError."},
    {"memory", (PyCFunction)Search_memory, METH_NOARGS, "memory() -> bytes held by the cache and tables."},
    {"explanation", (PyCFunction)Search_explanation, METH_NOARGS,
     "explanation() -> dict: prefix (longest linearizable prefix, op ids), stuck (op that\n"
     "could not be placed next, -1 if none), largest ({op: index into linearizations}),\n"
     "linearizations (tuples of op ids)."},
    {"stats", (PyCFunction)Search_stats, METH_NOARGS, "stats() -> dict of counters."},
    {NULL}
};

static PyTypeObject SearchType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "checkers.linearizability._wgl.Search",
    .tp_doc = "Search(events, comp, initial_states, step, illegal, explain=False): one partition's\n"
              "Wing & Gong / Lowe search, run in slices with run(max_steps).",
    .tp_basicsize = sizeof(Search),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Search_init,
    .tp_dealloc = (destructor)Search_dealloc,
    .tp_methods = Search_methods,
};

static struct PyModuleDef wglmodule = {
    PyModuleDef_HEAD_INIT, "_wgl",
    "Search core of the linearizability checker (Wing & Gong with Lowe's memoization).", -1, NULL,
};

PyMODINIT_FUNC PyInit__wgl(void) {
#ifdef __GLIBC__
    /* The searches allocate and free tables of megabytes, partition after
       partition. By default glibc maps each with mmap and unmaps it on free,
       so every search pays to fault fresh zeroed pages in again (a fifth of
       the time on porcupine's kv logs). Keep such blocks in the heap. */
    mallopt(M_MMAP_THRESHOLD, 256 * 1024 * 1024);
    mallopt(M_TRIM_THRESHOLD, 512 * 1024 * 1024);
#endif
    if (PyType_Ready(&SearchType) < 0) return NULL;
    PyObject *m = PyModule_Create(&wglmodule);
    if (!m) return NULL;
    Py_INCREF(&SearchType);
    if (PyModule_AddObject(m, "Search", (PyObject *)&SearchType) < 0) {
        Py_DECREF(&SearchType); Py_DECREF(m); return NULL;
    }
    PyModule_AddIntConstant(m, "RUNNING", ST_RUNNING);
    PyModule_AddIntConstant(m, "OK", ST_OK);
    PyModule_AddIntConstant(m, "ILLEGAL", ST_ILLEGAL);
    return m;
}
