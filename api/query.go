package api

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// QueryError is a rejected query string. Every error of the query parsers is
// of this type, so the server answers them all with 400 and the message.
type QueryError struct {
	Msg string
}

// Error returns the message as it goes into the error body.
func (e *QueryError) Error() string { return e.Msg }

func invalidQuery(format string, args ...any) *QueryError {
	return &QueryError{Msg: "invalid query parameters: " + fmt.Sprintf(format, args...)}
}

// Listing defaults and bounds shared by GET /jobs and GET /jobs/{id}/errors.
const (
	DefaultLimit = 50
	MaxLimit     = 2000
)

// Sort orders of paginated listings.
const (
	OrderAsc  = "asc"
	OrderDesc = "desc"
)

// Upper bounds of the range filters, from the wire types of the fields.
const (
	MaxPriority = 1<<16 - 1
	MaxAttempts = 1<<32 - 1
	MaxReadyAt  = 1<<64 - 1
)

// MaxPrefetch is the largest prefetch a take connection may ask for.
const MaxPrefetch = 1 << 31

// Range is an inclusive range filter of a query string; a nil bound is open.
type Range struct {
	Lo, Hi *uint64
}

// String renders the range as it is written in a query string: "N" when both
// bounds are equal, else "A..B", "..B", "A.." or ".." when fully open.
func (r Range) String() string {
	switch {
	case r.Lo != nil && r.Hi != nil && *r.Lo == *r.Hi:
		return strconv.FormatUint(*r.Lo, 10)
	case r.Lo != nil && r.Hi != nil:
		return strconv.FormatUint(*r.Lo, 10) + ".." + strconv.FormatUint(*r.Hi, 10)
	case r.Lo != nil:
		return strconv.FormatUint(*r.Lo, 10) + ".."
	case r.Hi != nil:
		return ".." + strconv.FormatUint(*r.Hi, 10)
	}
	return ".."
}

// Contains reports whether n lies within the range.
func (r Range) Contains(n uint64) bool {
	return (r.Lo == nil || n >= *r.Lo) && (r.Hi == nil || n <= *r.Hi)
}

// JobQuery is the filter of GET /jobs, GET /jobs/count, DELETE /jobs and
// PATCH /jobs, with the paging of the listing. An empty list or a nil range
// does not filter.
type JobQuery struct {
	// IDs, Queues, Types and BudgetKeys are sorted lexicographically and
	// Statuses in lifecycle order, all without duplicates.
	IDs, Queues, Types, Statuses, BudgetKeys []string
	Priority, ReadyAt, Attempts              *Range
	// Filter is the jq source of the payload filter; it is compiled by the
	// server, not here.
	Filter string
	// Parked selects only the parked jobs (?parked=true, our extension):
	// the waiting jobs of served queues that a budget cannot pay now, from
	// the server's live state. Their status stays "ready". False does not
	// filter.
	Parked bool
	// Order is OrderAsc or OrderDesc (OrderAsc when the query has none).
	Order string
	// Limit is the page size (DefaultLimit when the query has none).
	Limit int
	// From is the exclusive cursor of the page: a job ID, or "" for none.
	From string
}

// Query string keys of the job filters.
const (
	keyID         = "id"
	keyQueue      = "queue"
	keyType       = "type"
	keyStatus     = "status"
	keyPriority   = "priority"
	keyReadyAt    = "ready_at"
	keyAttempts   = "attempts"
	keyFilter     = "filter"
	keyBudgetKeys = "budgets.key"
	keyOrder      = "order"
	keyLimit      = "limit"
	keyFrom       = "from"
	keyPrefetch   = "prefetch"
	keyState      = "state"
	keyParked     = "parked"
	keyParent     = "parent"
	keyAllocation = "allocation"
	keyDurationMs = "duration_ms"
	keyBurst      = "burst"
)

var (
	filterKeys = []string{keyID, keyQueue, keyType, keyStatus, keyPriority, keyReadyAt, keyAttempts, keyFilter, keyBudgetKeys, keyParked}
	listKeys   = append(slices.Clone(filterKeys), keyOrder, keyLimit, keyFrom)
	takeKeys   = []string{keyQueue, keyPrefetch}
	errorsKeys = []string{keyFrom, keyOrder, keyLimit}
	stateKeys  = []string{keyState}
	budgetKeys = []string{keyState, keyParent}
	whatIfKeys = []string{keyAllocation, keyDurationMs, keyBurst}
)

// statusRank maps each job status to its place in the lifecycle, the order in
// which status lists are sorted.
var statusRank = map[string]int{
	StatusScheduled: 0,
	StatusReady:     1,
	StatusInFlight:  2,
	StatusCompleted: 3,
	StatusDead:      4,
}

// ParseJobQuery parses the query string of a job listing (paging true: the
// filters plus order, limit and from) or of a count, bulk delete or bulk patch
// (paging false: the filters only). Unknown keys are rejected.
//
// A key repeated in the query string (?queue=a&queue=b) is read as one comma
// list (queue=a,b) for the list filters; for every other key a repetition is
// rejected, since joining two ranges, jq programs or limits has no meaning.
func ParseJobQuery(v url.Values, paging bool) (JobQuery, error) {
	allowed := filterKeys
	if paging {
		allowed = listKeys
	}
	q := JobQuery{Order: OrderAsc, Limit: DefaultLimit}
	if err := checkKeys(v, allowed); err != nil {
		return q, err
	}
	var err error
	q.IDs = parseList(v, keyID)
	for _, id := range q.IDs {
		if !ValidJobID(id) {
			return q, &QueryError{Msg: fmt.Sprintf("invalid job ID: %q", id)}
		}
	}
	q.Queues = parseList(v, keyQueue)
	q.Types = parseList(v, keyType)
	if q.Statuses, err = parseStatuses(v); err != nil {
		return q, err
	}
	q.BudgetKeys = parseList(v, keyBudgetKeys)
	if err := checkUTF8(keyBudgetKeys, q.BudgetKeys...); err != nil {
		return q, err
	}
	if q.Priority, err = parseRangeParam(v, keyPriority, MaxPriority); err != nil {
		return q, err
	}
	if q.ReadyAt, err = parseRangeParam(v, keyReadyAt, MaxReadyAt); err != nil {
		return q, err
	}
	if q.Attempts, err = parseRangeParam(v, keyAttempts, MaxAttempts); err != nil {
		return q, err
	}
	if q.Filter, _, err = single(v, keyFilter); err != nil {
		return q, err
	}
	if q.Parked, err = parseBool(v, keyParked); err != nil {
		return q, err
	}
	if !paging {
		return q, nil
	}
	if q.Order, err = parseOrder(v); err != nil {
		return q, err
	}
	if q.Limit, err = parseLimit(v); err != nil {
		return q, err
	}
	if q.From, _, err = single(v, keyFrom); err != nil {
		return q, err
	}
	return q, nil
}

// Link renders the relative link of a page of this listing with the given
// cursor ("" for none) and order, in the layout of Zizq (docs/API.md
// §Listing jobs): "/jobs?[from=<id>&]order=<o>&limit=<n>" followed by the
// filters that are set, in the order status, queue, type, id, priority,
// ready_at, attempts, budgets.key, filter, then our extension parked=true.
// List values are joined with ',' and written as they are, except for the
// bytes that would not survive a query string (see appendQueryValue); the
// filter is fully percent-encoded. An empty order renders as OrderAsc.
func (q JobQuery) Link(from, order string) string {
	if order == "" {
		order = OrderAsc
	}
	b := make([]byte, 0, 64+len(q.Filter))
	b = append(b, "/jobs?"...)
	if from != "" {
		b = append(b, "from="...)
		b = appendQueryValue(b, from)
		b = append(b, '&')
	}
	b = append(b, "order="...)
	b = appendQueryValue(b, order)
	b = append(b, "&limit="...)
	b = strconv.AppendInt(b, int64(q.Limit), 10)
	b = appendListParam(b, keyStatus, q.Statuses)
	b = appendListParam(b, keyQueue, q.Queues)
	b = appendListParam(b, keyType, q.Types)
	b = appendListParam(b, keyID, q.IDs)
	b = appendRangeParam(b, keyPriority, q.Priority)
	b = appendRangeParam(b, keyReadyAt, q.ReadyAt)
	b = appendRangeParam(b, keyAttempts, q.Attempts)
	b = appendListParam(b, keyBudgetKeys, q.BudgetKeys)
	if q.Filter != "" {
		b = append(b, "&filter="...)
		b = appendEscaped(b, q.Filter)
	}
	if q.Parked {
		b = append(b, "&parked=true"...)
	}
	return string(b)
}

// Values renders q as the query string that ParseJobQuery, with the same
// paging, reads back into q: the filters that are set and, with paging, the
// order, limit and cursor that are set. Lists are joined with ','. Zero
// fields are left out, so that the server's defaults apply to them.
func (q JobQuery) Values(paging bool) url.Values {
	v := url.Values{}
	setList(v, keyID, q.IDs)
	setList(v, keyQueue, q.Queues)
	setList(v, keyType, q.Types)
	setList(v, keyStatus, q.Statuses)
	setList(v, keyBudgetKeys, q.BudgetKeys)
	setRange(v, keyPriority, q.Priority)
	setRange(v, keyReadyAt, q.ReadyAt)
	setRange(v, keyAttempts, q.Attempts)
	if q.Filter != "" {
		v.Set(keyFilter, q.Filter)
	}
	if q.Parked {
		v.Set(keyParked, "true")
	}
	if !paging {
		return v
	}
	if q.Order != "" {
		v.Set(keyOrder, q.Order)
	}
	if q.Limit > 0 {
		v.Set(keyLimit, strconv.Itoa(q.Limit))
	}
	if q.From != "" {
		v.Set(keyFrom, q.From)
	}
	return v
}

func setList(v url.Values, key string, list []string) {
	if len(list) > 0 {
		v.Set(key, strings.Join(list, ","))
	}
}

func setRange(v url.Values, key string, r *Range) {
	if r != nil && (r.Lo != nil || r.Hi != nil) {
		v.Set(key, r.String())
	}
}

// DefaultPrefetch is the prefetch of a take stream that asks for none.
const DefaultPrefetch = 1

// TakeQuery is the query string of GET /jobs/take.
type TakeQuery struct {
	// Queues to take from, sorted and without duplicates; nil for every
	// queue.
	Queues []string
	// Prefetch is how many unacknowledged jobs the stream may hold, 0 for
	// no limit (so the zero TakeQuery is unlimited: DefaultPrefetch is what
	// a query without prefetch gets).
	Prefetch int
}

// ParseTakeQuery parses the query string of GET /jobs/take.
func ParseTakeQuery(v url.Values) (TakeQuery, error) {
	if err := checkKeys(v, takeKeys); err != nil {
		return TakeQuery{}, err
	}
	q := TakeQuery{Queues: parseList(v, keyQueue), Prefetch: DefaultPrefetch}
	s, ok, err := single(v, keyPrefetch)
	if err != nil || !ok {
		return q, err
	}
	n, ok := parseDigits(s)
	if !ok || n > MaxPrefetch {
		return TakeQuery{}, invalidQuery("prefetch must be an integer between 0 and %d, not %q", MaxPrefetch, s)
	}
	if n > uint64(maxInt) {
		n = uint64(maxInt) // only on 32-bit platforms
	}
	q.Prefetch = int(n)
	return q, nil
}

// Values renders q as the query string ParseTakeQuery reads back into q;
// a prefetch of DefaultPrefetch is left out.
func (q TakeQuery) Values() url.Values {
	v := url.Values{}
	setList(v, keyQueue, q.Queues)
	if q.Prefetch != DefaultPrefetch {
		v.Set(keyPrefetch, strconv.Itoa(q.Prefetch))
	}
	return v
}

const maxInt = int(^uint(0) >> 1)

// ErrorsQuery is the query string of GET /jobs/{id}/errors: the paging of
// a job's error records.
type ErrorsQuery struct {
	// From is the exclusive attempt cursor, in the query only when
	// HasFrom. Attempts are numbered from 1, so from=0 excludes nothing in
	// ascending order; it still makes a page with a previous link.
	From    uint32
	HasFrom bool
	// Order is OrderAsc or OrderDesc (OrderAsc when the query has none).
	Order string
	// Limit is the page size (DefaultLimit when the query has none).
	Limit int
}

// ParseErrorsQuery parses the query string of GET /jobs/{id}/errors.
func ParseErrorsQuery(v url.Values) (ErrorsQuery, error) {
	if err := checkKeys(v, errorsKeys); err != nil {
		return ErrorsQuery{}, err
	}
	var q ErrorsQuery
	s, ok, err := single(v, keyFrom)
	if err != nil {
		return ErrorsQuery{}, err
	}
	if ok {
		n, ok := parseDigits(s)
		if !ok || n > MaxAttempts {
			return ErrorsQuery{}, invalidQuery("invalid from: %q is not an attempt number", s)
		}
		q.From, q.HasFrom = uint32(n), true
	}
	if q.Order, err = parseOrder(v); err != nil {
		return ErrorsQuery{}, err
	}
	if q.Limit, err = parseLimit(v); err != nil {
		return ErrorsQuery{}, err
	}
	return q, nil
}

// Values renders q as the query string ParseErrorsQuery reads back into q;
// zero fields are left out, so that the server's defaults apply.
func (q ErrorsQuery) Values() url.Values {
	v := url.Values{}
	if q.HasFrom {
		v.Set(keyFrom, strconv.FormatUint(uint64(q.From), 10))
	}
	if q.Order != "" {
		v.Set(keyOrder, q.Order)
	}
	if q.Limit > 0 {
		v.Set(keyLimit, strconv.Itoa(q.Limit))
	}
	return v
}

// Link renders the relative link of this page of a job's error records, in
// the layout of Zizq: "/jobs/<id>/errors?[from=N&]order=<o>&limit=<n>". An
// empty order renders as OrderAsc.
func (q ErrorsQuery) Link(jobID string) string {
	order := q.Order
	if order == "" {
		order = OrderAsc
	}
	b := make([]byte, 0, 64)
	b = append(b, "/jobs/"...)
	b = append(b, url.PathEscape(jobID)...)
	b = append(b, "/errors?"...)
	if q.HasFrom {
		b = append(b, "from="...)
		b = strconv.AppendUint(b, uint64(q.From), 10)
		b = append(b, '&')
	}
	b = append(b, "order="...)
	b = appendQueryValue(b, order)
	b = append(b, "&limit="...)
	b = strconv.AppendInt(b, int64(q.Limit), 10)
	return string(b)
}

// ParseStateQuery parses the query string of GET /budgets and
// GET /budgets/{key}: whether the live state was asked for (?state=true).
func ParseStateQuery(v url.Values) (bool, error) {
	if err := checkKeys(v, stateKeys); err != nil {
		return false, err
	}
	return parseBool(v, keyState)
}

// StateValues renders the query string ParseStateQuery reads back: nil
// without the live state, ?state=true with it.
func StateValues(state bool) url.Values {
	if !state {
		return nil
	}
	return url.Values{keyState: {"true"}}
}

// BudgetListQuery is the query string of GET /budgets: the live state
// (?state=true) and, for a family's sub-budgets, its key (?parent=, our
// extension). Without Parent the list holds families and plain budgets.
type BudgetListQuery struct {
	State  bool
	Parent string
}

// ParseBudgetListQuery parses the query string of GET /budgets; an empty
// parent is refused.
func ParseBudgetListQuery(v url.Values) (BudgetListQuery, error) {
	if err := checkKeys(v, budgetKeys); err != nil {
		return BudgetListQuery{}, err
	}
	var q BudgetListQuery
	var err error
	if q.State, err = parseBool(v, keyState); err != nil {
		return BudgetListQuery{}, err
	}
	parent, ok, err := single(v, keyParent)
	if err != nil {
		return BudgetListQuery{}, err
	}
	if ok && parent == "" {
		return BudgetListQuery{}, invalidQuery("parent must not be empty")
	}
	if err := checkUTF8(keyParent, parent); err != nil {
		return BudgetListQuery{}, err
	}
	q.Parent = parent
	return q, nil
}

// Values renders the query string ParseBudgetListQuery reads back.
func (q BudgetListQuery) Values() url.Values {
	v := StateValues(q.State)
	if q.Parent != "" {
		if v == nil {
			v = url.Values{}
		}
		v.Set(keyParent, q.Parent)
	}
	return v
}

// WhatIf is the query string of GET /budgets/{key}/forecast (our
// extension): a configuration to forecast with instead of the budget's
// own; nil fields keep the budget's. The server checks the values as a
// PATCH of them would be checked.
type WhatIf struct {
	Allocation *int64
	DurationMs *int64
	Burst      *int64
}

// ParseWhatIf parses the query string of GET /budgets/{key}/forecast:
// each of allocation, duration_ms and burst at most once, as decimal
// digits.
func ParseWhatIf(v url.Values) (WhatIf, error) {
	if err := checkKeys(v, whatIfKeys); err != nil {
		return WhatIf{}, err
	}
	var w WhatIf
	for _, f := range []struct {
		key string
		dst **int64
	}{{keyAllocation, &w.Allocation}, {keyDurationMs, &w.DurationMs}, {keyBurst, &w.Burst}} {
		s, ok, err := single(v, f.key)
		if err != nil {
			return WhatIf{}, err
		}
		if !ok {
			continue
		}
		n, ok := parseDigits(s)
		if !ok || n > math.MaxInt64 {
			return WhatIf{}, invalidQuery("%s must be a non-negative integer, not %q", f.key, s)
		}
		*f.dst = Ptr(int64(n))
	}
	return w, nil
}

// IsZero reports whether the what-if changes nothing: a plain forecast.
func (w WhatIf) IsZero() bool { return w == WhatIf{} }

// Values renders the query string ParseWhatIf reads back (nil when it
// changes nothing).
func (w WhatIf) Values() url.Values {
	var v url.Values
	for _, f := range []struct {
		key string
		val *int64
	}{{keyAllocation, w.Allocation}, {keyDurationMs, w.DurationMs}, {keyBurst, w.Burst}} {
		if f.val == nil {
			continue
		}
		if v == nil {
			v = url.Values{}
		}
		v.Set(f.key, strconv.FormatInt(*f.val, 10))
	}
	return v
}

// parseBool reads a flag that may appear once: true or 1, false or 0, and
// false when absent.
func parseBool(v url.Values, key string) (bool, error) {
	s, ok, err := single(v, key)
	if err != nil || !ok {
		return false, err
	}
	switch s {
	case "true", "1":
		return true, nil
	case "false", "0":
		return false, nil
	}
	return false, invalidQuery("%s must be true or false, not %q", key, s)
}

// checkKeys rejects the first key, in byte order, that is not allowed, so the
// message does not depend on map iteration.
func checkKeys(v url.Values, allowed []string) error {
	unknown := ""
	found := false
	for k := range v {
		if slices.Contains(allowed, k) {
			continue
		}
		if !found || k < unknown {
			unknown, found = k, true
		}
	}
	if found {
		return invalidQuery("unknown field `%s`, expected one of %s", unknown, quoteFields(allowed))
	}
	return nil
}

func quoteFields(fields []string) string {
	var b strings.Builder
	for i, f := range fields {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("`" + f + "`")
	}
	return b.String()
}

// single returns the value of a key that may appear at most once.
func single(v url.Values, key string) (string, bool, error) {
	vals := v[key]
	switch len(vals) {
	case 0:
		return "", false, nil
	case 1:
		return vals[0], true, nil
	}
	return "", false, invalidQuery("duplicate field `%s`", key)
}

// parseList reads a comma list, joining repeated keys: empty parts are
// skipped, and the result is sorted, without duplicates, and nil when empty.
// checkUTF8 refuses a budget key of the query string that is not UTF-8:
// it would be echoed back as U+FFFD, another key than the one sent.
func checkUTF8(key string, values ...string) error {
	for _, s := range values {
		if !utf8.ValidString(s) {
			return invalidQuery("%s must be valid UTF-8", key)
		}
	}
	return nil
}

func parseList(v url.Values, key string) []string {
	var out []string
	for _, val := range v[key] {
		for part := range strings.SplitSeq(val, ",") {
			if part != "" {
				out = append(out, part)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func parseStatuses(v url.Values) ([]string, error) {
	list := parseList(v, keyStatus)
	for _, s := range list {
		if _, ok := statusRank[s]; !ok {
			return nil, invalidQuery("unknown status: %s", s)
		}
	}
	slices.SortFunc(list, func(a, b string) int { return statusRank[a] - statusRank[b] })
	return list, nil
}

func parseRangeParam(v url.Values, key string, max uint64) (*Range, error) {
	s, ok, err := single(v, key)
	if err != nil || !ok {
		return nil, err
	}
	return parseRange(key, s, max)
}

// parseRange parses "N", "A..B", "..B", "A.." or "..", with bounds up to max.
// A fully open range gives nil: it does not filter.
func parseRange(field, s string, max uint64) (*Range, error) {
	loStr, hiStr, isRange := strings.Cut(s, "..")
	if !isRange {
		n, err := parseBound(field, s, max)
		if err != nil {
			return nil, err
		}
		return &Range{Lo: &n, Hi: &n}, nil
	}
	var r Range
	if loStr != "" {
		n, err := parseBound(field, loStr, max)
		if err != nil {
			return nil, err
		}
		r.Lo = &n
	}
	if hiStr != "" {
		n, err := parseBound(field, hiStr, max)
		if err != nil {
			return nil, err
		}
		r.Hi = &n
	}
	if r.Lo == nil && r.Hi == nil {
		return nil, nil
	}
	if r.Lo != nil && r.Hi != nil && *r.Lo > *r.Hi {
		return nil, invalidQuery("range lower bound exceeds upper bound")
	}
	return &r, nil
}

func parseBound(field, s string, max uint64) (uint64, error) {
	n, ok := parseDigits(s)
	if !ok {
		if len(s) > 0 && strings.Trim(s, "0123456789") == "" {
			return 0, invalidQuery("%s: %s is out of range (max %d)", field, s, max)
		}
		return 0, invalidQuery("%s: invalid number %q", field, s)
	}
	if n > max {
		return 0, invalidQuery("%s: %s is out of range (max %d)", field, s, max)
	}
	return n, nil
}

// parseDigits parses a non-empty string of ASCII digits that fits in a
// uint64; signs, spaces and other bases are refused.
func parseDigits(s string) (uint64, bool) {
	if s == "" || s[0] < '0' || s[0] > '9' {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

func parseOrder(v url.Values) (string, error) {
	s, ok, err := single(v, keyOrder)
	if err != nil {
		return "", err
	}
	switch {
	case !ok:
		return OrderAsc, nil
	case s == OrderAsc || s == OrderDesc:
		return s, nil
	}
	return "", invalidQuery("order must be asc or desc, not %q", s)
}

func parseLimit(v url.Values) (int, error) {
	s, ok, err := single(v, keyLimit)
	if err != nil {
		return 0, err
	}
	if !ok {
		return DefaultLimit, nil
	}
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, invalidQuery("invalid limit %q", s)
	}
	n, ok := parseDigits(s)
	if !ok || n < 1 || n > MaxLimit {
		return 0, &QueryError{Msg: fmt.Sprintf("limit must be between 1 and %d", MaxLimit)}
	}
	return int(n), nil
}

func appendListParam(b []byte, key string, list []string) []byte {
	if len(list) == 0 {
		return b
	}
	b = append(b, '&')
	b = append(b, key...)
	b = append(b, '=')
	for i, s := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendQueryValue(b, s)
	}
	return b
}

func appendRangeParam(b []byte, key string, r *Range) []byte {
	if r == nil || (r.Lo == nil && r.Hi == nil) {
		return b
	}
	b = append(b, '&')
	b = append(b, key...)
	b = append(b, '=')
	return append(b, r.String()...)
}

const hexDigits = "0123456789ABCDEF"

// appendQueryValue writes s into a query value unchanged, as Zizq does,
// except for the bytes that would change its meaning or are not allowed in a
// URL: controls, space, non-ASCII, and " # % & + ; < > \ ^ ` { | }.
// Everyday names (letters, digits, - _ . : / @ …) come out verbatim, and
// every value parses back to itself.
func appendQueryValue(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"#%&+;<>\\^`{|}", c) >= 0 {
			b = append(b, '%', hexDigits[c>>4], hexDigits[c&0xf])
		} else {
			b = append(b, c)
		}
	}
	return b
}

// appendEscaped percent-encodes every byte of s but the RFC 3986 unreserved
// characters (letters, digits, - . _ ~); spaces become %20.
func appendEscaped(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b = append(b, c)
		} else {
			b = append(b, '%', hexDigits[c>>4], hexDigits[c&0xf])
		}
	}
	return b
}
