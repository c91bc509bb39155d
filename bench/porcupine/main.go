// Command porcupine-bench times porcupine's checker (CheckEvents) on history
// files, for `make bench` (harness/bench_linearizability.py builds and runs it).
//
// It reads a JSON list of corpora on stdin:
//
//	[{"name": "c01-ok", "format": "kv-log", "model": "kv", "files": ["/path/c01-ok.txt"],
//	  "min_time_s": 0.3}, ...]
//
// format: "jepsen-log" (the etcd Jepsen logs) or "kv-log" (the kv logs).
// model: "register" (etcd: read, write, cas on one value, nil initially),
// "kv" (a string per key, partitioned by key) or "kv-whole" (one map, no
// partitioning). These are the models porcupine's own tests check these
// files with, written here from porcupine's public API.
//
// For each file it parses the history once (not timed), runs one warm-up
// check, then timed checks until at least -min-iterations have run and they
// took at least min_time_s seconds together (default -min-time; at most
// -max-iterations); the file's time is their mean. A corpus's check_s is the
// sum over its files, in seconds. It prints one JSON object on stdout:
//
//	{"porcupine": "v1.3.1", "go": "go1.26.8", "corpora": [
//	  {"name": "c01-ok", "check_s": 1.2e-05, "iterations": [..per file..], "verdicts": [true]}]}
//
// A file it cannot read or parse makes it exit 1 with the reason on stderr.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"hash/fnv"
	"os"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

const modulePath = "github.com/anishathalye/porcupine"

// ---- the etcd register (porcupine's etcd logs) ----

type regOp uint8

const (
	regRead regOp = iota
	regWrite
	regCas
)

type regIn struct {
	op   regOp
	a, b int // write: a; cas: a -> b
}

type regOut struct {
	ok      bool // cas: it swapped (false: it ran and found another value)
	exists  bool // read: the value was not nil
	value   int  // read: the value seen
	unknown bool // timed out or never completed: any outcome
}

// nilValue stands for nil, the register's initial value.
const nilValue = -1 << 40

func registerStep(state, input, output interface{}) (bool, interface{}) {
	st, in, out := state.(int), input.(regIn), output.(regOut)
	switch in.op {
	case regRead:
		if out.unknown {
			return true, st
		}
		if out.exists {
			return st == out.value, st
		}
		return st == nilValue, st
	case regWrite:
		return true, in.a
	default: // cas
		next := st
		if st == in.a {
			next = in.b
		}
		return out.unknown || out.ok == (st == in.a), next
	}
}

var registerModel = porcupine.Model{
	Init: func() interface{} { return nilValue },
	Step: registerStep,
}

// ---- the kv map (porcupine's kv logs) ----

type kvOp uint8

const (
	kvGet kvOp = iota
	kvPut
	kvAppend
)

type kvIn struct {
	op         kvOp
	key, value string
}

type kvOut struct {
	value   string // get: the value seen
	unknown bool   // never completed: any outcome
}

func fnvString(h uint64, s string) uint64 {
	f := fnv.New64a()
	f.Write([]byte(s))
	return h ^ f.Sum64()
}

// kvModel: one key's string, the history partitioned by key.
var kvModel = porcupine.Model{
	PartitionEvent: partitionByKey,
	Init:           func() interface{} { return "" },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		st, in, out := state.(string), input.(kvIn), output.(kvOut)
		switch in.op {
		case kvGet:
			return out.unknown || out.value == st, st
		case kvPut:
			return true, in.value
		default:
			return true, st + in.value
		}
	},
	Hash: func(state interface{}) uint64 { return fnvString(0, state.(string)) },
}

// kvWholeModel: the whole map as one state, no partitioning (porcupine's
// "kv no partition" benchmarks: a map copied on each write).
var kvWholeModel = porcupine.Model{
	Init: func() interface{} { return map[string]string{} },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		st, in, out := state.(map[string]string), input.(kvIn), output.(kvOut)
		if in.op == kvGet {
			return out.unknown || out.value == st[in.key], st
		}
		next := make(map[string]string, len(st)+1)
		for k, v := range st {
			next[k] = v
		}
		if in.op == kvPut {
			next[in.key] = in.value
		} else {
			next[in.key] = st[in.key] + in.value
		}
		return true, next
	},
	Equal: func(a, b interface{}) bool {
		x, y := a.(map[string]string), b.(map[string]string)
		if len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if w, ok := y[k]; !ok || w != v {
				return false
			}
		}
		return true
	},
	Hash: func(state interface{}) uint64 {
		var h uint64
		for k, v := range state.(map[string]string) {
			h = fnvString(h, k+"\x00"+v) // order-free: xor of the pairs
		}
		return h
	},
}

// partitionByKey groups a kv history's events by key, in order of first use.
func partitionByKey(history []porcupine.Event) [][]porcupine.Event {
	index := map[string]int{}
	keyOf := map[int]string{} // event id -> key, set at the call
	var parts [][]porcupine.Event
	for _, ev := range history {
		key, ok := keyOf[ev.Id]
		if ev.Kind == porcupine.CallEvent {
			key = ev.Value.(kvIn).key
			keyOf[ev.Id] = key
		} else if !ok {
			panic(fmt.Sprintf("return of event %d before its call", ev.Id))
		}
		i, seen := index[key]
		if !seen {
			i = len(parts)
			index[key] = i
			parts = append(parts, nil)
		}
		parts[i] = append(parts[i], ev)
	}
	return parts
}

// ---- readers ----

// history pairs calls and returns per process, as Jepsen logs do: an invoke
// opens an op, its process's next completion closes it, and ops still open
// at the end return after everything else with an unknown output.
type history struct {
	events []porcupine.Event
	open   map[int]int // process -> open op id
	next   int
}

func (h *history) call(proc int, in interface{}) {
	h.open[proc] = h.next
	h.events = append(h.events, porcupine.Event{ClientId: proc, Kind: porcupine.CallEvent, Value: in, Id: h.next})
	h.next++
}

func (h *history) ret(proc int, out interface{}) error {
	id, ok := h.open[proc]
	if !ok {
		return fmt.Errorf("a completion for process %d, which has no open op", proc)
	}
	delete(h.open, proc)
	h.events = append(h.events, porcupine.Event{ClientId: proc, Kind: porcupine.ReturnEvent, Value: out, Id: id})
	return nil
}

func (h *history) finish(unknown interface{}) []porcupine.Event {
	for id := 0; id < h.next; id++ { // in op order, for a deterministic history
		for proc, open := range h.open {
			if open == id {
				h.events = append(h.events, porcupine.Event{ClientId: proc, Kind: porcupine.ReturnEvent, Value: unknown, Id: id})
			}
		}
	}
	return h.events
}

func readLines(path string, each func(line string) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		if err := each(sc.Text()); err != nil {
			return fmt.Errorf("%s:%d: %v", path, n, err)
		}
	}
	return sc.Err()
}

// readJepsenLog reads an etcd log: "INFO  jepsen.util - P	:TYPE	:F	VALUE".
// :fail :cas is a cas that ran and found another value; :fail :read
// :timed-out a read with an unknown result; :info lines leave the op open.
func readJepsenLog(path string) ([]porcupine.Event, error) {
	h := &history{open: map[int]int{}}
	err := readLines(path, func(line string) error {
		fs := strings.Fields(line)
		if len(fs) < 7 || fs[1] != "jepsen.util" {
			return fmt.Errorf("not a Jepsen op line")
		}
		proc, err := strconv.Atoi(fs[3])
		if err != nil {
			return err
		}
		typ, f, val := fs[4], fs[5], strings.Join(fs[6:], " ")
		switch typ {
		case ":invoke":
			in := regIn{}
			switch f {
			case ":read":
			case ":write":
				in.op = regWrite
				in.a, err = strconv.Atoi(val)
			case ":cas":
				in.op = regCas
				_, err = fmt.Sscanf(val, "[%d %d]", &in.a, &in.b)
			default:
				err = fmt.Errorf("unknown function %s", f)
			}
			if err != nil {
				return err
			}
			h.call(proc, in)
			return nil
		case ":info":
			return nil
		case ":ok":
			out := regOut{ok: true}
			if f == ":read" && val != "nil" {
				out.exists = true
				if out.value, err = strconv.Atoi(val); err != nil {
					return err
				}
			}
			return h.ret(proc, out)
		case ":fail":
			switch {
			case f == ":cas":
				return h.ret(proc, regOut{})
			case f == ":read" && val == ":timed-out":
				return h.ret(proc, regOut{unknown: true})
			}
			return fmt.Errorf(":fail %s %s is not in porcupine's format", f, val)
		}
		return fmt.Errorf("unknown type %s", typ)
	})
	if err != nil {
		return nil, err
	}
	return h.finish(regOut{unknown: true}), nil
}

var kvLine = regexp.MustCompile(`^\{:process (\d+), :type :(invoke|ok), :f :(get|put|append), :key "(.*?)", :value (?:nil|"(.*)")\}\s*$`)

// readKvLog reads a kv log: one {:process P, :type T, :f F, :key K, :value V} per line.
func readKvLog(path string) ([]porcupine.Event, error) {
	h := &history{open: map[int]int{}}
	ops := map[string]kvOp{"get": kvGet, "put": kvPut, "append": kvAppend}
	err := readLines(path, func(line string) error {
		m := kvLine.FindStringSubmatch(line)
		if m == nil {
			return fmt.Errorf("not a kv op map")
		}
		proc, _ := strconv.Atoi(m[1])
		if m[2] == "invoke" {
			h.call(proc, kvIn{op: ops[m[3]], key: m[4], value: m[5]})
			return nil
		}
		out := kvOut{}
		if m[3] == "get" {
			out.value = m[5]
		}
		return h.ret(proc, out)
	})
	if err != nil {
		return nil, err
	}
	return h.finish(kvOut{unknown: true}), nil
}

// ---- timing ----

type corpus struct {
	Name   string   `json:"name"`
	Format string   `json:"format"`
	Model  string   `json:"model"`
	Files  []string `json:"files"`
	// MinTimeS: seconds of timed checks per file, at least (0: -min-time)
	MinTimeS float64 `json:"min_time_s"`
}

type result struct {
	Name       string  `json:"name"`
	CheckS     float64 `json:"check_s"`
	Iterations []int   `json:"iterations"`
	Verdicts   []bool  `json:"verdicts"`
}

func timeFile(model porcupine.Model, events []porcupine.Event, minIter, maxIter int, minTime time.Duration) (float64, int, bool) {
	verdict := porcupine.CheckEvents(model, events) // warm-up
	var total time.Duration
	n := 0
	for n < minIter || (total < minTime && n < maxIter) {
		t0 := time.Now()
		v := porcupine.CheckEvents(model, events)
		total += time.Since(t0)
		if v != verdict {
			fmt.Fprintf(os.Stderr, "porcupine-bench: verdict changed between runs\n")
			os.Exit(1)
		}
		n++
	}
	return total.Seconds() / float64(n), n, verdict
}

func porcupineVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == modulePath {
				return d.Version
			}
		}
	}
	return "unknown"
}

func main() {
	minIter := flag.Int("min-iterations", 3, "timed checks per file, at least")
	maxIter := flag.Int("max-iterations", 100000, "timed checks per file, at most")
	minTime := flag.Float64("min-time", 0.2, "seconds of timed checks per file, at least (within the bounds above)")
	flag.Parse()
	var corpora []corpus
	if err := json.NewDecoder(os.Stdin).Decode(&corpora); err != nil {
		fmt.Fprintf(os.Stderr, "porcupine-bench: reading the corpora from stdin: %v\n", err)
		os.Exit(1)
	}
	models := map[string]porcupine.Model{"register": registerModel, "kv": kvModel, "kv-whole": kvWholeModel}
	readers := map[string]func(string) ([]porcupine.Event, error){"jepsen-log": readJepsenLog, "kv-log": readKvLog}
	out := struct {
		Porcupine string   `json:"porcupine"`
		Go        string   `json:"go"`
		Corpora   []result `json:"corpora"`
	}{porcupineVersion(), runtime.Version(), nil}
	for _, c := range corpora {
		model, ok := models[c.Model]
		read, ok2 := readers[c.Format]
		if !ok || !ok2 {
			fmt.Fprintf(os.Stderr, "porcupine-bench: corpus %q: unknown model %q or format %q\n", c.Name, c.Model, c.Format)
			os.Exit(1)
		}
		r := result{Name: c.Name, Iterations: []int{}, Verdicts: []bool{}}
		minT := *minTime
		if c.MinTimeS > 0 {
			minT = c.MinTimeS
		}
		for _, f := range c.Files {
			events, err := read(f)
			if err != nil {
				fmt.Fprintf(os.Stderr, "porcupine-bench: %v\n", err)
				os.Exit(1)
			}
			s, n, v := timeFile(model, events, *minIter, *maxIter, time.Duration(minT*float64(time.Second)))
			r.CheckS += s
			r.Iterations = append(r.Iterations, n)
			r.Verdicts = append(r.Verdicts, v)
		}
		out.Corpora = append(out.Corpora, r)
	}
	enc := json.NewEncoder(os.Stdout)
	if err := enc.Encode(out); err != nil {
		fmt.Fprintf(os.Stderr, "porcupine-bench: %v\n", err)
		os.Exit(1)
	}
}
