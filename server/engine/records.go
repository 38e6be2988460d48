package engine

import (
	"slices"
	"strconv"

	"github.com/zizq/zizq/server/jobid"
	"github.com/zizq/zizq/store"
)

// jobRec is the engine's record of one live job. It holds only what the
// engine decides with, in 28 bytes and no pointers, so a backlog of
// millions costs little memory and nothing to the garbage collector: the
// payload and the job's history stay in the store, the queue is interned,
// the type and bindings are interned together, and the job's ID lives
// where the job is found (the id index, its group's ordered set, the
// promotion heap, its taker).
type jobRec struct {
	// readyLo and readyHi are readyAt (ms) in two words: with no field of
	// 8 bytes, the record needs no padding to a multiple of 8.
	readyLo, readyHi uint32
	attempts         uint32
	q                uint32 // index in Engine.queueList
	binds            uint32 // index in Engine.bindLists: type and bindings
	// aux is the record's place in the structure of its state: the
	// promotion heap (scheduled), its taker's slot (in flight), else -1.
	aux   int32
	prio  uint16
	state jobState
	flags recFlags
}

// readyAt is when the job is or became ready (ms).
func (r *jobRec) readyAt() int64 { return int64(uint64(r.readyHi)<<32 | uint64(r.readyLo)) }

func (r *jobRec) setReadyAt(ms int64) { r.readyLo, r.readyHi = uint32(ms), uint32(uint64(ms)>>32) }

// BytesPerJob is the heap the core counts for each queued job when it
// sizes its payload cache. BenchmarkEngine_MemoryPerJob measures the
// engine's live heap of a queued job without bindings at 82 bytes (its
// record and its entries in the id index and its group's set); the rest is
// what the runtime spends beside the live records (the collector's
// metadata, partly used spans), and it keeps --payload-cache-size's
// documented default: none left at about a million jobs under the default
// --memory-limit, whose RSS would otherwise hold the cache's payloads too.
const BytesPerJob = 100

type recFlags uint8

const (
	// recOverrides: the job has a retry limit, backoff or retention of its
	// own, in Engine.overrides.
	recOverrides recFlags = 1 << iota
	// recUnique: the job has a unique key, in Engine.unique.
	recUnique
	// recLead: the job's tag is not its ID's time; the slab holds the
	// difference (slab.lead).
	recLead
	// recBatch: the job is batched, its batch in Engine.batches.
	recBatch
	// recPending: the job is the pending job of its batch key.
	recPending
	// recHeld: a fold into the job is committing; it waits out of
	// dispatch until then.
	recHeld
	// recStartBy: the job has a deadline for waiting, in
	// Engine.deadlines (deadline.go).
	recStartBy
)

// overrides are a job's own settings, rare enough to keep beside the
// records.
type overrides struct {
	retryLimit *uint32
	backoff    *store.Backoff
	retention  *store.Retention
}

func (o *overrides) empty() bool {
	return o.retryLimit == nil && o.backoff == nil && o.retention == nil
}

// slab holds records in fixed chunks, so they never move and growing
// wastes no more than one chunk; freed slots are reused. Beside the
// records it holds their leads (leadOf): only a family's jobs have one, so
// a chunk of leads is made only for a chunk of records that holds such a
// job, and a record without one costs nothing for it.
type slab struct {
	chunks [][]jobRec
	leads  [][]int32 // by chunk; nil where no record of the chunk has a lead
	free   []int32
	n      int32
}

const slabChunk = 1 << 14

func (s *slab) alloc() int32 {
	if n := len(s.free); n > 0 {
		i := s.free[n-1]
		s.free = s.free[:n-1]
		return i
	}
	if int(s.n) == len(s.chunks)*slabChunk {
		s.chunks = append(s.chunks, make([]jobRec, slabChunk))
		s.leads = append(s.leads, nil)
	}
	s.n++
	return s.n - 1
}

func (s *slab) release(i int32) {
	*s.at(i) = jobRec{}
	if l := s.leads[i/slabChunk]; l != nil {
		l[i%slabChunk] = 0
	}
	s.free = append(s.free, i)
}

func (s *slab) at(i int32) *jobRec { return &s.chunks[i/slabChunk][i%slabChunk] }

// lead returns record i's lead (0: none).
func (s *slab) lead(i int32) int32 {
	if l := s.leads[i/slabChunk]; l != nil {
		return l[i%slabChunk]
	}
	return 0
}

func (s *slab) setLead(i, lead int32) {
	c := i / slabChunk
	if s.leads[c] == nil {
		if lead == 0 {
			return
		}
		s.leads[c] = make([]int32, slabChunk)
	}
	s.leads[c][i%slabChunk] = lead
}

// names interns strings as small indices.
type names struct {
	index map[string]uint32
	list  []string
}

func (n *names) intern(s string) uint32 {
	if i, ok := n.index[s]; ok {
		return i
	}
	if n.index == nil {
		n.index = map[string]uint32{}
	}
	i := uint32(len(n.list))
	n.list = append(n.list, s)
	n.index[s] = i
	return i
}

// bindList is one interned list of budget bindings, in the order the job
// gave them (the wire echoes that order), with the canonical signature
// that groups jobs by their bindings whatever their order (nil for none),
// and the jobs' type: jobs of a type mostly share their bindings, so the
// pair costs a record one index rather than two.
type bindList struct {
	typ   uint32 // index in Engine.types
	binds []bind
	sig   *signature
	key   string
	refs  int
}

// signature is a set of bindings in canonical order (by budget key).
type signature struct {
	binds []bind
	key   string
	refs  int
	// group is its group in the queue where it was last looked up
	// (queue.group): a family's sub-keys have a signature each, and their
	// groups are looked up on every dispatch, in a map of thousands.
	group *group
}

// internBinds returns the index of the list of type typ and binds,
// counting a reference; it keeps a copy of binds, not binds. It is never
// 0, the index of no list.
func (e *Engine) internBinds(typ uint32, binds []bind) uint32 {
	e.sigBuf = strconv.AppendUint(e.sigBuf[:0], uint64(typ), 10)
	e.sigBuf = appendBindKey(append(e.sigBuf, 0), binds)
	if i, ok := e.bindIndex[string(e.sigBuf)]; ok {
		e.bindLists[i].refs++
		return i
	}
	l := bindList{typ: typ, key: string(e.sigBuf), refs: 1}
	if len(binds) > 0 {
		l.binds = slices.Clone(binds) // the caller's may be a scratch buffer
		l.sig = e.internSignature(l.binds)
	}
	var i uint32
	if n := len(e.freeBinds); n > 0 {
		i = e.freeBinds[n-1]
		e.freeBinds = e.freeBinds[:n-1]
		e.bindLists[i] = l
	} else {
		i = uint32(len(e.bindLists))
		e.bindLists = append(e.bindLists, l)
	}
	e.bindIndex[l.key] = i
	return i
}

// releaseBinds drops a reference to a list, freeing it with the last.
func (e *Engine) releaseBinds(i uint32) {
	if i == 0 {
		return
	}
	l := &e.bindLists[i]
	if l.refs--; l.refs > 0 {
		return
	}
	if l.sig != nil {
		if l.sig.refs--; l.sig.refs == 0 {
			delete(e.signatures, l.sig.key)
		}
	}
	delete(e.bindIndex, l.key)
	*l = bindList{}
	e.freeBinds = append(e.freeBinds, i)
}

func (e *Engine) internSignature(binds []bind) *signature {
	sig := sortedBinds(binds)
	key := string(appendBindKey(nil, sig))
	s := e.signatures[key]
	if s == nil {
		s = &signature{binds: sig, key: key}
		e.signatures[key] = s
	}
	s.refs++
	return s
}

func appendBindKey(buf []byte, binds []bind) []byte {
	for _, b := range binds {
		buf = append(buf, b.a.cfg.Key...)
		buf = append(buf, 0)
		buf = strconv.AppendInt(buf, b.cost, 10)
		buf = append(buf, 0)
	}
	return buf
}

// typeOf returns the index of a record's type in Engine.types.
func (e *Engine) typeOf(r *jobRec) uint32 { return e.bindLists[r.binds].typ }

// binds returns a record's bindings in the job's order.
func (e *Engine) binds(r *jobRec) []bind { return e.bindLists[r.binds].binds }

// sigOf returns a record's canonical signature (nil: no bindings).
func (e *Engine) sigOf(r *jobRec) *signature { return e.bindLists[r.binds].sig }

// idIndex finds a live job's record by its ID. It is an ordered set
// rather than a map: IDs mostly arrive in increasing order, which keeps
// it dense (about 20 bytes a job, where a map of this size takes 55).
type idIndex struct{ t bptree[idEntry] }

// idEntry finds a job's record by its ID.
type idEntry struct {
	id  packedID
	idx int32
}

func (a idEntry) less(b idEntry) bool { return a.id.less(b.id) }

func (x *idIndex) get(id jobid.ID) (int32, bool) {
	e, ok := x.t.get(idEntry{id: packID(id)})
	return e.idx, ok
}

func (x *idIndex) set(id jobid.ID, idx int32) { x.t.set(idEntry{id: packID(id), idx: idx}) }
func (x *idIndex) delete(id jobid.ID)         { x.t.delete(idEntry{id: packID(id)}) }
func (x *idIndex) len() int                   { return x.t.len() }

// all returns every live job, for an operation that touches them all.
func (x *idIndex) all() []ref {
	out := make([]ref, 0, x.t.len())
	x.t.ascend(0, func(e idEntry) bool {
		out = append(out, ref{id: e.id.unpack(), idx: e.idx})
		return true
	})
	return out
}
