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
 *     as "native" kinds that C runs without Python or the transition table
 *     (a comparison of state ids); an append's result is a chain state
 *     (parent state, op), made once per (state, op) through the table and
 *     compared with a read's string by length, then suffix by suffix from
 *     the end, and remembered as that string once equal;
 *   - the core reads the ops itself (call, ret, f, input, output; straight
 *     from the slots of the checker's Operation) and sorts their entries,
 *     so building a search costs about as much as a small partition's
 *     search (porcupine's kv logs have partitions of 2 to 50 ops);
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
#include <structmember.h>
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
            if (e[0] == h) {  /* a few words: compared inline (memcmp's call costs more) */
                size_t k = 0;
                while (k < ew && e[1 + k] == words[k]) k++;
                if (k == ew) return 0;
            }
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
    int32_t parent;        /* -1 for an atom, else the state appended to */
    int32_t op;            /* a chain's append op */
    PyObject *content;     /* a chain's materialized value (owned), or NULL */
    Py_ssize_t len;        /* the length of its value when that is a str (None: 0), else -1 */
} StInfo;

typedef struct {
    PyObject_HEAD
    /* history */
    Py_ssize_t n;          /* ops */
    Py_ssize_t K;          /* components */
    Py_ssize_t W;          /* bitset words */
    Py_ssize_t SW;         /* state-vector words */
    Py_ssize_t EW;         /* entry words = W + SW */
    void *block;           /* the per-op and per-entry arrays below, one allocation */
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
    PyObject *ops;         /* the ops (a list or tuple), passed to step */
    PyObject *step;        /* callable(state, op) -> new state or ILLEGAL */
    PyObject *illegal;     /* the ILLEGAL sentinel */
    PyObject *intern;      /* dict: state -> id (atoms only) */
    PyObject *states;      /* list: id -> state (atoms; None placeholder for chains) */
    int natives;           /* 1: nkind, na, nb and suffix are filled in */
    int8_t *nkind;         /* native kind per op (K_PY: Python step) */
    int32_t *na, *nb;      /* native arguments: state ids of interned values */
    PyObject **suffix;     /* per append op: what it appends (owned), else NULL */
    StInfo *st;            /* per state */
    size_t st_len, st_cap;
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
        StInfo *p = PyMem_Realloc(s->st, ncap * sizeof(StInfo));
        if (!p) { PyErr_NoMemory(); return -1; }
        s->st = p;
        s->st_cap = ncap;
    }
    s->st[n - 1].parent = parent;
    s->st[n - 1].op = op;
    s->st[n - 1].content = NULL;
    if (parent < 0) {
        PyObject *v = PyList_GET_ITEM(s->states, n - 1);
        s->st[n - 1].len = v == Py_None ? 0 : PyUnicode_Check(v) ? PyUnicode_GET_LENGTH(v) : -1;
    } else {
        PyObject *suf = s->suffix[op];
        Py_ssize_t pl = s->st[parent].len;
        s->st[n - 1].len = pl >= 0 && PyUnicode_Check(suf) ? pl + PyUnicode_GET_LENGTH(suf) : -1;
    }
    s->st_len = n;
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
    if (s->st[sid].parent < 0) return PyList_GET_ITEM(s->states, sid);
    if (s->st[sid].content) return s->st[sid].content;
    /* walk up to a materialized ancestor, then build forward */
    int32_t top = sid;
    Py_ssize_t depth = 0;
    while (s->st[top].parent >= 0 && !s->st[top].content) { top = s->st[top].parent; depth++; }
    int32_t *path = PyMem_Malloc((depth + 1) * sizeof(int32_t));
    if (!path) { PyErr_NoMemory(); return NULL; }
    Py_ssize_t k = 0;
    for (int32_t x = sid; x != top; x = s->st[x].parent) path[k++] = x;
    PyObject *acc = s->st[top].parent < 0 ? PyList_GET_ITEM(s->states, top) : s->st[top].content;
    for (Py_ssize_t i = k - 1; i >= 0; i--) {
        int32_t x = path[i];
        PyObject *suffix = s->suffix[s->st[x].op];
        PyObject *v = acc == Py_None ? (Py_INCREF(suffix), suffix) : PyNumber_Add(acc, suffix);
        if (!v) { PyMem_Free(path); return NULL; }
        s->st[x].content = v;  /* owned */
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
    while (s->st[x].parent >= 0) {
        PyObject *c = s->st[x].content;
        if (c) {
            if (!PyUnicode_Check(c)) return -3;
            return PyUnicode_GET_LENGTH(c) == end && (end == 0 || PyUnicode_Tailmatch(v, c, 0, end, -1) == 1);
        }
        PyObject *suf = s->suffix[s->st[x].op];
        if (!PyUnicode_Check(suf)) return -3;
        Py_ssize_t L = PyUnicode_GET_LENGTH(suf);
        if (L > end) return 0;
        if (L) {
            Py_ssize_t r = PyUnicode_Tailmatch(v, suf, end - L, end, 1);
            if (r != 1) return r < 0 ? -1 : 0;
        }
        end -= L;
        x = s->st[x].parent;
    }
    PyObject *a = PyList_GET_ITEM(s->states, x);
    if (a == Py_None) return end == 0;
    if (!PyUnicode_Check(a)) return -3;
    return PyUnicode_GET_LENGTH(a) == end && (end == 0 || PyUnicode_Tailmatch(v, a, 0, end, -1) == 1);
}

/* value(sid) == value(aid), aid an atom: 1, 0, or -1 on error */
static int state_equals(Search *s, int32_t sid, int32_t aid) {
    if (sid == aid) return 1;
    if (s->st[sid].parent < 0) return 0;  /* atoms are interned: distinct ids differ */
    PyObject *target = PyList_GET_ITEM(s->states, aid);
    if (PyUnicode_Check(target)) {
        if (s->st[sid].len >= 0 && s->st[sid].len != PyUnicode_GET_LENGTH(target)) return 0;
        int r = chain_equals_str(s, sid, target);
        if (r == 1 && !s->st[sid].content) {
            /* remember the value: later comparisons of this chain and of the
               chains built on it stop here instead of walking to the root */
            Py_INCREF(target);
            s->st[sid].content = target;
        }
        if (r != -3) return r;
    }
    PyObject *v = state_value(s, sid);
    if (!v) return -1;
    return PyObject_RichCompareBool(v, PyList_GET_ITEM(s->states, aid), Py_EQ);
}

/* next state id of an append or Python step from state sid, through the
 * transition table; -1 = illegal; -2 = Python error */
static int32_t transition_slow(Search *s, int32_t op, int32_t sid);

/* next state id of op from state sid; -1 = illegal; -2 = Python error.
 * A one-entry memo per op sits in front: the DFS retries an op from the state
 * it last tried it in far more often than not, and the memo is small enough
 * to stay in cache when the table is not. Register steps are computed again
 * on a miss (a comparison of ids, or of a chain with a string that usually
 * differs in its last part); only appends (whose chain must be made once per
 * (state, op)) and Python steps go through the transition table. */
static inline int32_t transition(Search *s, int32_t op, int32_t sid) {
    if (s->memo_sid[op] == sid) return s->memo_out[op];
    int32_t out;
    int eq;
    switch (s->nkind[op]) {
    case K_READ: eq = state_equals(s, sid, s->na[op]); out = eq > 0 ? sid : -1; break;
    case K_READ_ANY: eq = 0; out = sid; break;
    case K_WRITE: eq = 0; out = s->na[op]; break;
    case K_CAS: eq = state_equals(s, sid, s->na[op]); out = eq > 0 ? s->nb[op] : -1; break;
    case K_CAS_FALSE: eq = state_equals(s, sid, s->na[op]); out = eq > 0 ? -1 : sid; break;
    case K_CAS_ANY: eq = state_equals(s, sid, s->na[op]); out = eq > 0 ? s->nb[op] : sid; break;
    default: eq = 0; out = transition_slow(s, op, sid);
    }
    if (eq < 0) return -2;
    if (out >= -1) { s->memo_sid[op] = sid; s->memo_out[op] = out; }
    return out;
}

static int32_t transition_slow(Search *s, int32_t op, int32_t sid) {
    uint64_t key = (((uint64_t)(uint32_t)op << 32) | (uint32_t)sid) + 1;
    int32_t out;
    size_t slot;
    if (!s->trans.slots && trans_init(&s->trans, s->trans.cap) < 0) { PyErr_NoMemory(); return -2; }
    if (trans_find(&s->trans, key, &slot)) return s->trans.slots[slot].val;
    if (s->nkind[op] == K_APPEND) {
        out = new_chain(s, sid, op);
        if (out < 0) return -2;
        if (trans_put(&s->trans, key, out, slot) < 0) { PyErr_NoMemory(); return -2; }
        return out;
    }
    PyObject *st = state_value(s, sid);
    if (!st) return -2;
    PyObject *argv[2] = {st, PySequence_Fast_GET_ITEM(s->ops, op)};
    PyObject *r = PyObject_Vectorcall(s->step, argv, 2, NULL);
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

/* ---- reading the ops ----
 * Attributes read from every op, by number. An op of a slots class (the
 * checker's Operation) is read straight from its slots: the member offsets
 * are learnt once per type (kept until the type changes), since a generic
 * getattr per field would cost as much as a small partition's search. */
enum { A_CALL, A_RET, A_F, A_INPUT, A_OUTPUT, A_KEY, A_N };
static const char *attr_str[A_N] = {"call", "ret", "f", "input", "output", "key"};
static PyObject *attr_name[A_N];   /* interned at module init */
static PyObject *A_index, *A_line; /* for error messages */
static struct { PyTypeObject *type; unsigned int tag; Py_ssize_t off[A_N]; } layout;

static void learn_layout(PyTypeObject *tp) {
    Py_INCREF(tp);
    Py_XSETREF(layout.type, tp);  /* held, so its address cannot name another type */
    for (int a = 0; a < A_N; a++) {
        layout.off[a] = -1;
        if (tp->tp_getattro != PyObject_GenericGetAttr) continue;
        PyObject *d = _PyType_Lookup(tp, attr_name[a]);  /* borrowed */
        if (d && Py_IS_TYPE(d, &PyMemberDescr_Type)) {
            PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
            if (m->type == T_OBJECT_EX || m->type == T_OBJECT) layout.off[a] = m->offset;
        }
    }
    layout.tag = (tp->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) ? tp->tp_version_tag : 0;
}

/* getattr(op, attr_str[a]): a new reference, or NULL with an exception */
static inline PyObject *op_get(PyObject *op, int a) {
    PyTypeObject *tp = Py_TYPE(op);
    if (tp != layout.type || !layout.tag || tp->tp_version_tag != layout.tag ||
        !(tp->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG))
        learn_layout(tp);
    if (layout.off[a] > 0) {
        PyObject *v = *(PyObject **)((char *)op + layout.off[a]);
        if (v) { Py_INCREF(v); return v; }
    }
    return PyObject_GetAttr(op, attr_name[a]);
}

/* An entry to sort: time, then call (0) before return (1), then op. */
typedef struct { int64_t t; uint32_t sub; } Ev;

static int ev_cmp(const void *a, const void *b) {
    const Ev *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return x->sub < y->sub ? -1 : x->sub > y->sub;
}

static int64_t attr_time(PyObject *op, int a, int *is_none) {
    PyObject *v = op_get(op, a);
    if (!v) return -1;
    *is_none = v == Py_None;
    int64_t t = *is_none ? 0 : PyLong_AsLongLong(v);
    Py_DECREF(v);
    return t;
}

static int u64_cmp(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Sort v[0..n): insertion sort, which is linear on the nearly sorted entries
 * of a history (ops listed by call, each returning soon after), falling back
 * to qsort when the entries are far from sorted. */
static void sort_u64(uint64_t *v, size_t n) {
    size_t moves = 0, limit = 8 * n + 64;
    for (size_t i = 1; i < n; i++) {
        uint64_t x = v[i];
        size_t j = i;
        while (j > 0 && v[j - 1] > x) {
            v[j] = v[j - 1];
            j--;
            if (++moves > limit) { v[j] = x; qsort(v, n, sizeof *v, u64_cmp); return; }
        }
        v[j] = x;
    }
}

/* The entry list in time order (calls before returns at equal times, then op
 * order), ops that never returned returning after every other event; fills
 * next/prev/match/opof and open_end. 0, or -1 with an exception (an op that
 * returns before its call: ValueError naming it). */
static int build_entries(Search *s, PyObject **ops) {
    Py_ssize_t n = s->n, m = 2 * n;
    Ev *ev = PyMem_Malloc((m + 1) * sizeof(Ev));
    uint64_t *key = PyMem_Malloc((m + 1) * sizeof(uint64_t));
    int32_t *call_node = PyMem_Malloc((n ? n : 1) * sizeof(int32_t));
    if (!ev || !key || !call_node) { PyErr_NoMemory(); goto fail; }
    int64_t top = INT64_MIN, low = INT64_MAX;
    for (Py_ssize_t i = 0; i < n; i++) {
        int none_c = 0, none_r = 0;
        int64_t c = attr_time(ops[i], A_CALL, &none_c);
        if (c == -1 && PyErr_Occurred()) goto fail;
        int64_t r = attr_time(ops[i], A_RET, &none_r);
        if (r == -1 && PyErr_Occurred()) goto fail;
        if (none_c) { PyErr_Format(PyExc_TypeError, "op %zd has no call time", i); goto fail; }
        if (!none_r && r < c) {
            PyObject *idx = PyObject_GetAttr(ops[i], A_index), *line = idx ? PyObject_GetAttr(ops[i], A_line) : NULL;
            if (line)
                PyErr_Format(PyExc_ValueError, "op %zd (index %R, line %R) returns at %lld before its call at %lld",
                             i, idx, line, (long long)r, (long long)c);
            Py_XDECREF(idx); Py_XDECREF(line);
            goto fail;
        }
        s->open_end[i] = (int8_t)none_r;
        if (c > top) top = c;
        if (c < low) low = c;
        if (!none_r && r > top) top = r;
        ev[2 * i].t = c; ev[2 * i].sub = 0;
        ev[2 * i + 1].t = r; ev[2 * i + 1].sub = 1;
    }
    if (n && top == INT64_MAX) { PyErr_SetString(PyExc_OverflowError, "op times reach the largest int64"); goto fail; }
    /* one sort key per entry: time since the first call, then call (0) before
       return (1), then op; ops that never returned return at top + 1 */
    int opbits = 1;
    while (opbits < 31 && ((Py_ssize_t)1 << opbits) < n) opbits++;
    int subbits = opbits + 1;
    uint64_t span = n ? (uint64_t)top - (uint64_t)low + 1 : 0;  /* times are in [low, top + 1] */
    int packed = span < ((uint64_t)1 << (63 - subbits));
    for (Py_ssize_t k = 0; k < m; k++) {
        Py_ssize_t i = k >> 1;
        int64_t t = (k & 1) && s->open_end[i] ? top + 1 : ev[k].t;
        if (packed) key[k] = (((uint64_t)t - (uint64_t)low) << subbits) | ((uint64_t)(k & 1) << opbits) | (uint64_t)i;
        else { ev[k].t = t; ev[k].sub = ((uint32_t)(k & 1) << 30) | (uint32_t)i; }
    }
    if (packed) sort_u64(key, (size_t)m);
    else qsort(ev, (size_t)m, sizeof(Ev), ev_cmp);
    uint64_t opmask = ((uint64_t)1 << opbits) - 1;
    s->next[0] = m >= 1 ? 1 : -1; s->prev[0] = -1; s->match[0] = -1; s->opof[0] = -1;
    for (Py_ssize_t k = 0; k < m; k++) {
        int32_t op; int is_ret;
        if (packed) { op = (int32_t)(key[k] & opmask); is_ret = (int)((key[k] >> opbits) & 1); }
        else { op = (int32_t)(ev[k].sub & ((1u << 30) - 1)); is_ret = (int)(ev[k].sub >> 30); }
        int32_t node = (int32_t)(k + 1);
        s->opof[node] = op;
        s->prev[node] = node - 1;
        s->next[node] = (k + 1 < m) ? node + 1 : -1;
        if (!is_ret) {
            call_node[op] = node;
        } else {  /* a return sorts after its call: ret >= call, and calls first on ties */
            s->match[call_node[op]] = node;
            s->match[node] = -1;
        }
    }
    PyMem_Free(ev); PyMem_Free(key); PyMem_Free(call_node);
    return 0;
fail:
    PyMem_Free(ev); PyMem_Free(key); PyMem_Free(call_node);
    return -1;
}

/* Native kinds from `kinds` ({f: READ|WRITE|CAS|APPEND}): a read whose output
 * is `unknown` reads anything; a cas whose output is False ran and failed its
 * compare, one whose output is `unknown` may or may not have applied. A cas
 * whose input is not a pair is left to the model's step. */
static int build_natives(Search *s, PyObject **ops, PyObject *kinds, PyObject *unknown) {
    Py_ssize_t n = s->n;
    PyObject *seen_f[8];   /* the f objects met so far (borrowed), and their kinds */
    long seen_kind[8];
    int nseen = 0;
    s->natives = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        s->na[i] = s->nb[i] = -1;
        PyObject *f = op_get(ops[i], A_F);
        if (!f) return -1;
        long kind = -1;
        for (int j = 0; j < nseen; j++)
            if (seen_f[j] == f) { kind = seen_kind[j]; break; }
        if (kind < 0) {  /* f not seen as this object: look it up (ops keep their f alive) */
            PyObject *k = PyDict_GetItemWithError(kinds, f);
            if (!k && PyErr_Occurred()) { Py_DECREF(f); return -1; }
            kind = k ? PyLong_AsLong(k) : K_PY;
            if (kind == -1 && PyErr_Occurred()) { Py_DECREF(f); return -1; }
            if (nseen < 8) { seen_f[nseen] = f; seen_kind[nseen++] = kind; }
        }
        Py_DECREF(f);
        if (kind == K_PY) continue;
        PyObject *a = NULL, *b = NULL, *out = NULL, *in = NULL;
        int ok = 0;
        switch (kind) {
        case K_READ:
            if (!(out = op_get(ops[i], A_OUTPUT))) return -1;
            if (out == unknown) kind = K_READ_ANY; else a = out;
            ok = 1;
            break;
        case K_WRITE:
            if (!(in = op_get(ops[i], A_INPUT))) return -1;
            a = in; ok = 1;
            break;
        case K_APPEND:  /* its argument is never a state: kept as is, not interned */
            if (!(s->suffix[i] = op_get(ops[i], A_INPUT))) return -1;
            s->nkind[i] = K_APPEND;
            continue;
        case K_CAS:
            if (!(in = op_get(ops[i], A_INPUT))) return -1;
            if ((PyTuple_Check(in) || PyList_Check(in)) && PySequence_Fast_GET_SIZE(in) == 2) {
                if (!(out = op_get(ops[i], A_OUTPUT))) { Py_DECREF(in); return -1; }
                a = PySequence_Fast_GET_ITEM(in, 0);
                if (out == Py_False) kind = K_CAS_FALSE;
                else { b = PySequence_Fast_GET_ITEM(in, 1); if (out == unknown) kind = K_CAS_ANY; }
                ok = 1;
            }
            break;
        default:
            PyErr_Format(PyExc_ValueError, "native kind %ld (for op %zd) is not READ, WRITE, CAS or APPEND", kind, i);
            return -1;
        }
        int32_t ia = ok && a ? intern_state(s, a) : -1, ib = ok && b && ia >= 0 ? intern_state(s, b) : -1;
        int err = (a && ia < 0) || (b && ib < 0);
        Py_XDECREF(in); Py_XDECREF(out);
        if (err) return -1;
        if (ok) { s->nkind[i] = (int8_t)kind; s->na[i] = ia; s->nb[i] = ib; }
    }
    return 0;
}

#define ALLOC(p, count, type) \
    do { if (!((p) = PyMem_Malloc(((count) ? (count) : 1) * sizeof(type)))) { PyErr_NoMemory(); goto out; } } while (0)

/* Search(ops, comp, initial_states, step, illegal, explain=False, kinds=None, unknown=None)
 *   ops: sequence of n ops, each with call and ret (int times; ret None: never
 *     returned), and f, input, output when kinds is given
 *   comp: sequence of n ints, the component each op acts on (0..K-1), or None (all 0)
 *   initial_states: sequence of K objects, each component's initial state
 *   step: callable(state, op) -> next state, or `illegal`
 *   kinds: {f: native kind} for ops the core steps itself; unknown: the
 *     output of an op whose result was never seen */
static int Search_init(Search *s, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"ops", "comp", "initial_states", "step", "illegal", "explain", "kinds",
                             "unknown", NULL};
    PyObject *opsarg, *comp, *inits, *step, *illegal, *kinds = Py_None, *unknown = Py_None;
    int explain = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOOO|pOO", kwlist, &opsarg, &comp, &inits,
                                     &step, &illegal, &explain, &kinds, &unknown))
        return -1;
    if (s->block) { PyErr_SetString(PyExc_RuntimeError, "Search already initialised"); return -1; }
    if (kinds != Py_None && !PyDict_Check(kinds)) { PyErr_SetString(PyExc_TypeError, "kinds must be a dict or None"); return -1; }
    if (!PyCallable_Check(step)) { PyErr_SetString(PyExc_TypeError, "step must be callable"); return -1; }
    PyObject *ops = PySequence_Fast(opsarg, "ops must be a sequence");
    if (!ops) return -1;
    s->ops = ops;  /* owned; the step is called with its items */
    PyObject *is = PySequence_Fast(inits, "initial_states must be a sequence");
    if (!is) return -1;
    int rc = -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(ops);
    Py_ssize_t K = PySequence_Fast_GET_SIZE(is);
    if (K < 1) { PyErr_SetString(PyExc_ValueError, "initial_states must hold at least one component"); goto out; }
    if (n >= (1 << 29)) { PyErr_SetString(PyExc_ValueError, "too many ops"); goto out; }
    s->n = n; s->K = K;
    s->W = (n + 63) / 64; if (s->W == 0) s->W = 1;
    s->SW = (K + 1) / 2;
    s->EW = s->W + s->SW;
    /* one zeroed block: 8-byte arrays, then 4-byte ones, then bytes */
    size_t N = (size_t)(n ? n : 1), M = 2 * (size_t)n + 1;
    char *b = s->block = PyMem_Calloc(1, N * (8 + 8 + 7 * 4 + 2) + M * 4 * 4);
    if (!b) { PyErr_NoMemory(); goto out; }
    s->zkey = (uint64_t *)b; b += N * 8;
    s->suffix = (PyObject **)b; b += N * 8;
    s->comp = (int32_t *)b; b += N * 4;
    s->memo_sid = (int32_t *)b; b += N * 4;
    s->memo_out = (int32_t *)b; b += N * 4;
    s->stk_node = (int32_t *)b; b += N * 4;
    s->stk_old = (int32_t *)b; b += N * 4;
    s->na = (int32_t *)b; b += N * 4;
    s->nb = (int32_t *)b; b += N * 4;
    s->next = (int32_t *)b; b += M * 4;
    s->prev = (int32_t *)b; b += M * 4;
    s->match = (int32_t *)b; b += M * 4;
    s->opof = (int32_t *)b; b += M * 4;
    s->open_end = (int8_t *)b; b += N;
    s->nkind = (int8_t *)b;  /* all K_PY until build_natives */
    if (!(s->lin = PyMem_Calloc(s->EW, sizeof(uint64_t)))) { PyErr_NoMemory(); goto out; }
    s->state = (int32_t *)(s->lin + s->W);
    if (comp != Py_None) {
        PyObject *cp = PySequence_Fast(comp, "comp must be a sequence of ints");
        if (!cp) goto out;
        if (PySequence_Fast_GET_SIZE(cp) != n) {
            PyErr_Format(PyExc_ValueError, "comp has %zd entries for %zd ops", PySequence_Fast_GET_SIZE(cp), n);
            Py_DECREF(cp); goto out;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            long c = PyLong_AsLong(PySequence_Fast_GET_ITEM(cp, i));
            if ((c == -1 && PyErr_Occurred()) || c < 0 || c >= K) {
                if (!PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "comp[%zd] = %ld is not in [0, %zd)", i, c, K);
                Py_DECREF(cp); goto out;
            }
            s->comp[i] = (int32_t)c;
        }
        Py_DECREF(cp);
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        s->zkey[i] = mix64((uint64_t)i * 0x2545f4914f6cdd1dULL + 0x1234567ULL);
        s->memo_sid[i] = -1;
    }
    if (build_entries(s, PySequence_Fast_ITEMS(ops)) < 0) goto out;
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
    if (kinds != Py_None && build_natives(s, PySequence_Fast_ITEMS(ops), kinds, unknown) < 0) goto out;
    /* tables sized by history (fewer regrowths), small for small partitions;
       the transition table is made at the first append or Python step */
    size_t cap0 = 64;
    while (cap0 < (size_t)n * 4 && cap0 < (1u << 20)) cap0 *= 2;
    s->trans.cap = cap0;
    if (cache_init(&s->cache, cap0, (size_t)s->EW) < 0) { PyErr_NoMemory(); goto out; }
    s->cur = s->next[0];
    s->status = ST_RUNNING;
    s->explain = explain;
    s->best_len = -1; s->best_done = -1; s->best_stuck = -1;
    if (explain) {
        ALLOC(s->best_seq, n, int32_t); ALLOC(s->longest_ref, n, int32_t);
        if (!(s->longest_len = PyMem_Calloc(n ? n : 1, sizeof(int32_t)))) { PyErr_NoMemory(); goto out; }
        if (!(s->seqs = PyList_New(0))) goto out;
        for (Py_ssize_t i = 0; i < n; i++) s->longest_ref[i] = -1;
    }
    rc = 0;
out:
    Py_DECREF(is);
    return rc;
}
#undef ALLOC

/* partition_by(ops, attr) -> [(key, [ops with that key])], keys in order of first appearance */
static PyObject *partition_by(PyObject *unused, PyObject *args) {
    PyObject *opsarg, *attr;
    if (!PyArg_ParseTuple(args, "OU", &opsarg, &attr)) return NULL;
    PyObject *ops = PySequence_Fast(opsarg, "ops must be a sequence");
    if (!ops) return NULL;
    int fast = PyUnicode_Compare(attr, attr_name[A_KEY]) == 0;
    PyObject *index = PyDict_New(), *groups = PyList_New(0);
    if (!index || !groups) goto err;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(ops); i++) {
        PyObject *op = PySequence_Fast_GET_ITEM(ops, i);
        PyObject *key = fast ? op_get(op, A_KEY) : PyObject_GetAttr(op, attr);
        if (!key) goto err;
        PyObject *g = PyDict_GetItemWithError(index, key);  /* borrowed: the group's list */
        if (!g) {
            if (PyErr_Occurred() || !(g = PyList_New(0))) { Py_DECREF(key); goto err; }
            PyObject *pair = PyTuple_Pack(2, key, g);
            int bad = !pair || PyDict_SetItem(index, key, g) < 0 || PyList_Append(groups, pair) < 0;
            Py_XDECREF(pair); Py_DECREF(g);
            if (bad) { Py_DECREF(key); goto err; }
        }
        Py_DECREF(key);
        if (PyList_Append(g, op) < 0) goto err;
    }
    Py_DECREF(index); Py_DECREF(ops);
    return groups;
err:
    Py_XDECREF(index); Py_XDECREF(groups); Py_DECREF(ops);
    return NULL;
}

static void Search_dealloc(Search *s) {
    if (s->natives) for (Py_ssize_t i = 0; i < s->n; i++) Py_XDECREF(s->suffix[i]);
    PyMem_Free(s->block); PyMem_Free(s->lin);
    PyMem_Free(s->best_seq); PyMem_Free(s->longest_len); PyMem_Free(s->longest_ref);
    trans_free(&s->trans);
    cache_free(&s->cache);
    for (size_t i = 0; i < s->st_len; i++) Py_XDECREF(s->st[i].content);
    PyMem_Free(s->st);
    Py_XDECREF(s->ops); Py_XDECREF(s->step); Py_XDECREF(s->illegal); Py_XDECREF(s->intern);
    Py_XDECREF(s->states); Py_XDECREF(s->seqs);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static PyObject *Search_memory(Search *s, PyObject *unused) {
    size_t b = s->cache.cap * 8 + s->cache.arena_cap * (s->cache.ew + 1) * 8
             + (s->trans.slots ? s->trans.cap * sizeof(TransSlot) : 0)
             + s->st_cap * sizeof(StInfo) + (size_t)s->n * 78 + (size_t)s->EW * 8;
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
    return Py_BuildValue("{sKsKsKsnsnsnsn}", "steps", s->steps, "step_calls", s->step_calls,
                         "backtracks", s->backtracks, "cache_entries", (Py_ssize_t)s->cache.len,
                         "states", PyList_GET_SIZE(s->states), "transitions", (Py_ssize_t)s->trans.len,
                         "depth", s->depth);
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

static PyMemberDef Search_members[] = {
    {"status", T_INT, offsetof(Search, status), READONLY, "0 still running, 1 linearizable, 2 not"},
    {"steps", T_ULONGLONG, offsetof(Search, steps), READONLY, "search steps so far"},
    {"cache_entries", T_PYSSIZET, offsetof(Search, cache.len), READONLY, "memoized (set, state) pairs"},
    {NULL}
};

static PyTypeObject SearchType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "checkers.linearizability._wgl.Search",
    .tp_doc = "Search(ops, comp, initial_states, step, illegal, explain=False, kinds=None, unknown=None):\n"
              "one partition's Wing & Gong / Lowe search, run in slices with run(max_steps).",
    .tp_basicsize = sizeof(Search),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Search_init,
    .tp_dealloc = (destructor)Search_dealloc,
    .tp_methods = Search_methods,
    .tp_members = Search_members,
};

static PyMethodDef module_methods[] = {
    {"partition_by", partition_by, METH_VARARGS,
     "partition_by(ops, attr) -> [(key, [ops])]: ops grouped by getattr(op, attr), keys in order\n"
     "of first appearance, ops in their order."},
    {NULL}
};

static struct PyModuleDef wglmodule = {
    PyModuleDef_HEAD_INIT, "_wgl",
    "Search core of the linearizability checker (Wing & Gong with Lowe's memoization).", -1, module_methods,
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
    for (int a = 0; a < A_N; a++)
        if (!(attr_name[a] = PyUnicode_InternFromString(attr_str[a]))) return NULL;
    if (!(A_index = PyUnicode_InternFromString("index")) || !(A_line = PyUnicode_InternFromString("line")))
        return NULL;
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
