package api

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const (
	filterFieldList = "`id`, `queue`, `type`, `status`, `priority`, `ready_at`, `attempts`, `filter`, `budgets.key`, `parked`"
	listFieldList   = filterFieldList + ", `order`, `limit`, `from`"
	id1             = "036z951mhjikzik2gsl81gr7l"
	id2             = "036z951mhjikzik2gsl81gr7m"
)

func u64(n uint64) *uint64 { return &n }

func rng(lo, hi *uint64) *Range { return &Range{Lo: lo, Hi: hi} }

func mustQuery(t *testing.T, raw string) url.Values {
	t.Helper()
	v, err := url.ParseQuery(raw)
	require.NoError(t, err)
	return v
}

func TestParseJobQuery(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		raw    string
		paging bool
		want   JobQuery
	}{
		{
			name:   "Defaults",
			raw:    "",
			paging: true,
			want:   JobQuery{Order: "asc", Limit: 50},
		},
		{
			name:   "DefaultsWithoutPaging",
			raw:    "",
			paging: false,
			want:   JobQuery{Order: "asc", Limit: 50},
		},
		{
			name:   "Lists",
			raw:    "queue=b,a,,b&type=,x&id=" + id2 + "," + id1 + "&budgets.key=k2,k1,k2",
			paging: true,
			want: JobQuery{
				IDs: []string{id1, id2}, Queues: []string{"a", "b"}, Types: []string{"x"},
				BudgetKeys: []string{"k1", "k2"}, Order: "asc", Limit: 50,
			},
		},
		{
			name:   "EmptyListsDoNotFilter",
			raw:    "queue=&type=,,&status=&id=,&budgets.key=",
			paging: false,
			want:   JobQuery{Order: "asc", Limit: 50},
		},
		{
			name:   "StatusesInLifecycleOrder",
			raw:    "status=dead,ready,completed,in_flight,scheduled,ready",
			paging: false,
			want:   JobQuery{Statuses: []string{"scheduled", "ready", "in_flight", "completed", "dead"}, Order: "asc", Limit: 50},
		},
		{
			name:   "RepeatedListKeysJoin",
			raw:    "queue=c&queue=a,b&status=dead&status=ready",
			paging: false,
			want:   JobQuery{Queues: []string{"a", "b", "c"}, Statuses: []string{"ready", "dead"}, Order: "asc", Limit: 50},
		},
		{
			name:   "Ranges",
			raw:    "priority=7&ready_at=10..20&attempts=..3",
			paging: false,
			want: JobQuery{
				Priority: rng(u64(7), u64(7)), ReadyAt: rng(u64(10), u64(20)), Attempts: rng(nil, u64(3)),
				Order: "asc", Limit: 50,
			},
		},
		{
			name:   "RangeBounds",
			raw:    "priority=0..65535&ready_at=18446744073709551615..&attempts=4294967295",
			paging: false,
			want: JobQuery{
				Priority: rng(u64(0), u64(65535)), ReadyAt: rng(u64(18446744073709551615), nil),
				Attempts: rng(u64(4294967295), u64(4294967295)), Order: "asc", Limit: 50,
			},
		},
		{
			name:   "EqualBounds",
			raw:    "priority=5..5",
			paging: false,
			want:   JobQuery{Priority: rng(u64(5), u64(5)), Order: "asc", Limit: 50},
		},
		{
			name:   "OpenRangeDoesNotFilter",
			raw:    "priority=..&ready_at=..",
			paging: false,
			want:   JobQuery{Order: "asc", Limit: 50},
		},
		{
			name:   "Paging",
			raw:    "order=desc&limit=2000&from=" + id1 + "&filter=.a+%3D%3D+1",
			paging: true,
			want:   JobQuery{Filter: ".a == 1", Order: "desc", Limit: 2000, From: id1},
		},
		{
			name:   "LimitOne",
			raw:    "limit=1&order=asc",
			paging: true,
			want:   JobQuery{Order: "asc", Limit: 1},
		},
		{
			name:   "Parked",
			raw:    "parked=true&status=ready",
			paging: false,
			want:   JobQuery{Statuses: []string{"ready"}, Parked: true, Order: "asc", Limit: 50},
		},
		{
			name:   "ParkedOne",
			raw:    "parked=1",
			paging: true,
			want:   JobQuery{Parked: true, Order: "asc", Limit: 50},
		},
		{
			name:   "ParkedFalseDoesNotFilter",
			raw:    "parked=false",
			paging: true,
			want:   JobQuery{Order: "asc", Limit: 50},
		},
		{
			name:   "EmptyFromAndFilter",
			raw:    "from=&filter=",
			paging: true,
			want:   JobQuery{Order: "asc", Limit: 50},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseJobQuery(mustQuery(t, tt.raw), tt.paging)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestParseJobQuery_Errors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		raw    string
		paging bool
		want   string
	}{
		{"UnknownField", "queue=a&bogus=1", true, "invalid query parameters: unknown field `bogus`, expected one of " + listFieldList},
		{"FirstUnknownInByteOrder", "zz=1&aa=2&queue=a", false, "invalid query parameters: unknown field `aa`, expected one of " + filterFieldList},
		{"OrderWithoutPaging", "order=asc", false, "invalid query parameters: unknown field `order`, expected one of " + filterFieldList},
		{"LimitWithoutPaging", "limit=5", false, "invalid query parameters: unknown field `limit`, expected one of " + filterFieldList},
		{"FromWithoutPaging", "from=" + id1, false, "invalid query parameters: unknown field `from`, expected one of " + filterFieldList},
		{"UnknownStatus", "status=ready,running", false, "invalid query parameters: unknown status: running"},
		{"StatusCase", "status=Ready", false, "invalid query parameters: unknown status: Ready"},
		{"ShortID", "id=abc", false, `invalid job ID: "abc"`},
		{"UpperCaseID", "id=" + strings.ToUpper(id1), false, `invalid job ID: "036Z951MHJIKZIK2GSL81GR7L"`},
		{"QuotedID", "id=a%22b", false, `invalid job ID: "a\"b"`},
		{"PriorityNotNumber", "priority=high", false, `invalid query parameters: priority: invalid number "high"`},
		{"PriorityNegative", "priority=-1", false, `invalid query parameters: priority: invalid number "-1"`},
		{"PriorityPlus", "priority=%2B1", false, `invalid query parameters: priority: invalid number "+1"`},
		{"PriorityEmpty", "priority=", false, `invalid query parameters: priority: invalid number ""`},
		{"PriorityOverflow", "priority=65536", false, "invalid query parameters: priority: 65536 is out of range (max 65535)"},
		{"PriorityHighOverflow", "priority=..70000", false, "invalid query parameters: priority: 70000 is out of range (max 65535)"},
		{"AttemptsOverflow", "attempts=4294967296..", false, "invalid query parameters: attempts: 4294967296 is out of range (max 4294967295)"},
		{"ReadyAtOverflow", "ready_at=18446744073709551616", false, "invalid query parameters: ready_at: 18446744073709551616 is out of range (max 18446744073709551615)"},
		{"ReadyAtSpace", "ready_at=1+", false, `invalid query parameters: ready_at: invalid number "1 "`},
		{"ThreeDots", "attempts=1...2", false, `invalid query parameters: attempts: invalid number ".2"`},
		{"TwoRanges", "attempts=1..2..3", false, `invalid query parameters: attempts: invalid number "2..3"`},
		{"LowAboveHigh", "priority=10..5", false, "invalid query parameters: range lower bound exceeds upper bound"},
		{"DuplicateRange", "priority=1&priority=2", false, "invalid query parameters: duplicate field `priority`"},
		{"DuplicateFilter", "filter=.a&filter=.b", false, "invalid query parameters: duplicate field `filter`"},
		{"DuplicateLimit", "limit=1&limit=2", true, "invalid query parameters: duplicate field `limit`"},
		{"DuplicateFrom", "from=a&from=b", true, "invalid query parameters: duplicate field `from`"},
		{"LimitZero", "limit=0", true, "limit must be between 1 and 2000"},
		{"LimitTooLarge", "limit=2001", true, "limit must be between 1 and 2000"},
		{"LimitHuge", "limit=99999999999999999999999", true, "limit must be between 1 and 2000"},
		{"LimitNotNumber", "limit=ten", true, `invalid query parameters: invalid limit "ten"`},
		{"LimitNegative", "limit=-5", true, `invalid query parameters: invalid limit "-5"`},
		{"LimitEmpty", "limit=", true, `invalid query parameters: invalid limit ""`},
		{"OrderUnknown", "order=up", true, `invalid query parameters: order must be asc or desc, not "up"`},
		{"OrderEmpty", "order=", true, `invalid query parameters: order must be asc or desc, not ""`},
		{"OrderCase", "order=ASC", true, `invalid query parameters: order must be asc or desc, not "ASC"`},
		{"ParkedNotBool", "parked=x", true, `invalid query parameters: parked must be true or false, not "x"`},
		{"ParkedEmpty", "parked=", false, `invalid query parameters: parked must be true or false, not ""`},
		{"ParkedCase", "parked=TRUE", false, `invalid query parameters: parked must be true or false, not "TRUE"`},
		{"DuplicateParked", "parked=true&parked=false", false, "invalid query parameters: duplicate field `parked`"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseJobQuery(mustQuery(t, tt.raw), tt.paging)
			var qe *QueryError
			require.ErrorAs(t, err, &qe)
			require.EqualError(t, err, tt.want)
		})
	}
}

func TestJobQuery_Link(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		q     JobQuery
		from  string
		order string
		want  string
	}{
		{"Defaults", JobQuery{Order: "asc", Limit: 50}, "", "asc", "/jobs?order=asc&limit=50"},
		{"EmptyOrderIsAsc", JobQuery{Limit: 50}, "", "", "/jobs?order=asc&limit=50"},
		{"Cursor", JobQuery{Limit: 10}, id1, "desc", "/jobs?from=" + id1 + "&order=desc&limit=10"},
		{
			name: "EveryFilterInOrder",
			q: JobQuery{
				IDs: []string{id1, id2}, Queues: []string{"a", "b"}, Types: []string{"t"},
				Statuses: []string{"ready", "dead"}, BudgetKeys: []string{"k1", "k:2"},
				Priority: rng(u64(5), u64(5)), ReadyAt: rng(nil, u64(99)), Attempts: rng(u64(1), nil),
				Filter: `.user.name == "Zoë" and .n > 1`, Limit: 50,
			},
			from: id2, order: "asc",
			want: "/jobs?from=" + id2 + "&order=asc&limit=50&status=ready,dead&queue=a,b&type=t&id=" + id1 + "," + id2 +
				"&priority=5&ready_at=..99&attempts=1..&budgets.key=k1,k:2" +
				"&filter=.user.name%20%3D%3D%20%22Zo%C3%AB%22%20and%20.n%20%3E%201",
		},
		{
			name: "ParkedLast",
			q:    JobQuery{Queues: []string{"q"}, Filter: ".a", Parked: true, Limit: 5},
			from: id1, order: "desc",
			want: "/jobs?from=" + id1 + "&order=desc&limit=5&queue=q&filter=.a&parked=true",
		},
		{"ClosedRange", JobQuery{Priority: rng(u64(1), u64(9)), Limit: 5}, "", "asc", "/jobs?order=asc&limit=5&priority=1..9"},
		{"OpenRangeOmitted", JobQuery{Priority: rng(nil, nil), Limit: 5}, "", "asc", "/jobs?order=asc&limit=5"},
		{
			name: "NamesStayReadable",
			q:    JobQuery{Queues: []string{"mail/out-1.x_y:z@h~!$'()*=?"}, Limit: 50},
			from: "", order: "asc",
			want: "/jobs?order=asc&limit=50&queue=mail/out-1.x_y:z@h~!$'()*=?",
		},
		{
			name: "UnsafeBytesEscaped",
			q:    JobQuery{Queues: []string{"a&b", "c d", "e+f", "g#h", "i%j", "k;l", "é"}, Limit: 50},
			from: "x&y", order: "asc",
			want: "/jobs?from=x%26y&order=asc&limit=50&queue=a%26b,c%20d,e%2Bf,g%23h,i%25j,k%3Bl,%C3%A9",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			link := tt.q.Link(tt.from, tt.order)
			require.Equal(t, tt.want, link)
		})
	}
}

func TestJobQuery_LinkParsesBack(t *testing.T) {
	t.Parallel()
	raw := "queue=a%26b,c%20d,e%2Bf,%C3%A9,x=y&type=t&status=dead,ready&id=" + id1 +
		"&priority=..9&ready_at=3&attempts=2..&budgets.key=b&filter=.a+%7C+test(%22%5Ex%22)&parked=1&order=desc&limit=7&from=" + id2
	q, err := ParseJobQuery(mustQuery(t, raw), true)
	require.NoError(t, err)
	link := q.Link(q.From, q.Order)
	back, err := ParseJobQuery(mustQuery(t, strings.TrimPrefix(link, "/jobs?")), true)
	require.NoError(t, err)
	require.Equal(t, q, back)
}

func TestRange_String(t *testing.T) {
	t.Parallel()
	require.Equal(t, "7", Range{Lo: u64(7), Hi: u64(7)}.String())
	require.Equal(t, "1..2", Range{Lo: u64(1), Hi: u64(2)}.String())
	require.Equal(t, "1..", Range{Lo: u64(1)}.String())
	require.Equal(t, "..2", Range{Hi: u64(2)}.String())
	require.Equal(t, "..", Range{}.String())
}

func TestRange_Contains(t *testing.T) {
	t.Parallel()
	r := Range{Lo: u64(2), Hi: u64(4)}
	require.False(t, r.Contains(1))
	require.True(t, r.Contains(2))
	require.True(t, r.Contains(4))
	require.False(t, r.Contains(5))
	require.True(t, Range{}.Contains(0))
	require.True(t, Range{Hi: u64(3)}.Contains(0))
	require.False(t, Range{Lo: u64(3)}.Contains(2))
}

func TestParseTakeQuery(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		raw      string
		queues   []string
		prefetch int
	}{
		{"Defaults", "", nil, 1},
		{"Queues", "queue=b,a,b,", []string{"a", "b"}, 1},
		{"RepeatedQueues", "queue=b&queue=a", []string{"a", "b"}, 1},
		{"EmptyQueue", "queue=", nil, 1},
		{"Unlimited", "prefetch=0", nil, 0},
		{"Prefetch", "prefetch=16&queue=q", []string{"q"}, 16},
		{"Max", "prefetch=2147483648", nil, 2147483648},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q, err := ParseTakeQuery(mustQuery(t, tt.raw))
			require.NoError(t, err)
			require.Equal(t, TakeQuery{Queues: tt.queues, Prefetch: tt.prefetch}, q)
			back, err := ParseTakeQuery(q.Values())
			require.NoError(t, err)
			require.Equal(t, q, back, "Values parses back")
		})
	}
}

func TestParseTakeQuery_Errors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		raw  string
		want string
	}{
		{"UnknownField", "queue=a&limit=5", "invalid query parameters: unknown field `limit`, expected one of `queue`, `prefetch`"},
		{"TooLarge", "prefetch=2147483649", `invalid query parameters: prefetch must be an integer between 0 and 2147483648, not "2147483649"`},
		{"Negative", "prefetch=-1", `invalid query parameters: prefetch must be an integer between 0 and 2147483648, not "-1"`},
		{"NotNumber", "prefetch=all", `invalid query parameters: prefetch must be an integer between 0 and 2147483648, not "all"`},
		{"Empty", "prefetch=", `invalid query parameters: prefetch must be an integer between 0 and 2147483648, not ""`},
		{"Duplicate", "prefetch=1&prefetch=2", "invalid query parameters: duplicate field `prefetch`"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseTakeQuery(mustQuery(t, tt.raw))
			var qe *QueryError
			require.ErrorAs(t, err, &qe)
			require.EqualError(t, err, tt.want)
		})
	}
}

func TestParseErrorsQuery(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		raw  string
		want ErrorsQuery
	}{
		{"Defaults", "", ErrorsQuery{Order: "asc", Limit: 50}},
		{"All", "from=3&order=desc&limit=2", ErrorsQuery{From: 3, HasFrom: true, Order: "desc", Limit: 2}},
		{"FromZero", "from=0", ErrorsQuery{HasFrom: true, Order: "asc", Limit: 50}},
		{"MaxFrom", "from=4294967295", ErrorsQuery{From: 4294967295, HasFrom: true, Order: "asc", Limit: 50}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q, err := ParseErrorsQuery(mustQuery(t, tt.raw))
			require.NoError(t, err)
			require.Equal(t, tt.want, q)
			back, err := ParseErrorsQuery(q.Values())
			require.NoError(t, err)
			require.Equal(t, q, back, "Values parses back")
		})
	}
}

func TestParseErrorsQuery_Errors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		raw  string
		want string
	}{
		{"UnknownField", "status=dead", "invalid query parameters: unknown field `status`, expected one of `from`, `order`, `limit`"},
		{"FromNotNumber", "from=x", `invalid query parameters: invalid from: "x" is not an attempt number`},
		{"FromOverflow", "from=4294967296", `invalid query parameters: invalid from: "4294967296" is not an attempt number`},
		{"FromEmpty", "from=", `invalid query parameters: invalid from: "" is not an attempt number`},
		{"Order", "order=newest", `invalid query parameters: order must be asc or desc, not "newest"`},
		{"Limit", "limit=2001", "limit must be between 1 and 2000"},
		{"DuplicateOrder", "order=asc&order=desc", "invalid query parameters: duplicate field `order`"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseErrorsQuery(mustQuery(t, tt.raw))
			var qe *QueryError
			require.ErrorAs(t, err, &qe)
			require.EqualError(t, err, tt.want)
		})
	}
}

func TestErrorsQuery_Link(t *testing.T) {
	t.Parallel()
	require.Equal(t, "/jobs/"+id1+"/errors?order=asc&limit=50", ErrorsQuery{Order: "asc", Limit: 50}.Link(id1))
	require.Equal(t, "/jobs/"+id1+"/errors?from=0&order=desc&limit=2", ErrorsQuery{HasFrom: true, Order: "desc", Limit: 2}.Link(id1))
	require.Equal(t, "/jobs/"+id1+"/errors?from=7&order=asc&limit=50", ErrorsQuery{From: 7, HasFrom: true, Limit: 50}.Link(id1))
	require.Equal(t, "/jobs/a%2Fb/errors?order=asc&limit=1", ErrorsQuery{Order: "asc", Limit: 1}.Link("a/b"))
}

func TestErrorsQuery_Values(t *testing.T) {
	t.Parallel()
	require.Empty(t, ErrorsQuery{}.Values(), "zero fields are left to the server")
	require.Equal(t, "from=0", ErrorsQuery{HasFrom: true}.Values().Encode())
	require.Equal(t, "from=9&limit=3&order=desc", ErrorsQuery{From: 9, HasFrom: true, Order: "desc", Limit: 3}.Values().Encode())
}

func TestTakeQuery_Values(t *testing.T) {
	t.Parallel()
	require.Equal(t, "prefetch=0", TakeQuery{}.Values().Encode(), "the zero TakeQuery is unlimited")
	require.Empty(t, TakeQuery{Prefetch: DefaultPrefetch}.Values(), "the default is left out")
	require.Equal(t, "prefetch=16&queue=a%2Cb%2Cc", TakeQuery{Queues: []string{"a", "b", "c"}, Prefetch: 16}.Values().Encode())
}

func TestJobQuery_Values(t *testing.T) {
	t.Parallel()
	full := JobQuery{
		IDs: []string{id1, id2}, Queues: []string{"a&b", "c"}, Types: []string{"t"}, Statuses: []string{"ready", "dead"},
		BudgetKeys: []string{"k:1"}, Priority: rng(u64(5), u64(5)), ReadyAt: rng(nil, u64(99)), Attempts: rng(u64(1), nil),
		Filter: `.a == "x"`, Parked: true, Order: "desc", Limit: 7, From: id1,
	}
	tests := []struct {
		name   string
		q      JobQuery
		paging bool
		want   string
	}{
		{"Zero", JobQuery{}, true, ""},
		{"OpenRangeLeftOut", JobQuery{Priority: rng(nil, nil)}, false, ""},
		{"Filters", full, false, "attempts=1..&budgets.key=k%3A1&filter=.a+%3D%3D+%22x%22&id=" + id1 + "%2C" + id2 +
			"&parked=true&priority=5&queue=a%26b%2Cc&ready_at=..99&status=ready%2Cdead&type=t"},
		{"Paging", JobQuery{Order: "asc", Limit: 50, From: id2}, true, "from=" + id2 + "&limit=50&order=asc"},
		{"PagingLeftOutOfFilters", JobQuery{Order: "asc", Limit: 50, From: id2}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, tt.q.Values(tt.paging).Encode())
		})
	}
}

func TestStateValues(t *testing.T) {
	t.Parallel()
	require.Nil(t, StateValues(false))
	for _, state := range []bool{false, true} {
		got, err := ParseStateQuery(StateValues(state))
		require.NoError(t, err)
		require.Equal(t, state, got)
	}
}

func TestParseStateQuery(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw  string
		want bool
		err  string
	}{
		{raw: "", want: false},
		{raw: "state=true", want: true},
		{raw: "state=1", want: true},
		{raw: "state=false", want: false},
		{raw: "state=0", want: false},
		{raw: "state=yes", err: `invalid query parameters: state must be true or false, not "yes"`},
		{raw: "state=", err: `invalid query parameters: state must be true or false, not ""`},
		{raw: "state=true&state=false", err: "invalid query parameters: duplicate field `state`"},
		{raw: "state=true&key=a", err: "invalid query parameters: unknown field `key`, expected one of `state`"},
	}
	for _, tt := range tests {
		got, err := ParseStateQuery(mustQuery(t, tt.raw))
		if tt.err != "" {
			var qe *QueryError
			require.ErrorAs(t, err, &qe, tt.raw)
			require.EqualError(t, err, tt.err, tt.raw)
			continue
		}
		require.NoError(t, err, tt.raw)
		require.Equal(t, tt.want, got, tt.raw)
	}
}

func TestParseBudgetListQuery(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw  string
		want BudgetListQuery
		err  string
	}{
		{raw: "", want: BudgetListQuery{}},
		{raw: "state=true", want: BudgetListQuery{State: true}},
		{raw: "parent=tenants", want: BudgetListQuery{Parent: "tenants"}},
		{raw: "parent=a%2Fb%2Cc&state=1", want: BudgetListQuery{State: true, Parent: "a/b,c"}},
		{raw: "parent=", err: "invalid query parameters: parent must not be empty"},
		{raw: "parent=a&parent=b", err: "invalid query parameters: duplicate field `parent`"},
		{raw: "state=maybe", err: `invalid query parameters: state must be true or false, not "maybe"`},
		{raw: "family=a", err: "invalid query parameters: unknown field `family`, expected one of `state`, `parent`"},
	}
	for _, tt := range tests {
		got, err := ParseBudgetListQuery(mustQuery(t, tt.raw))
		if tt.err != "" {
			var qe *QueryError
			require.ErrorAs(t, err, &qe, tt.raw)
			require.EqualError(t, err, tt.err, tt.raw)
			continue
		}
		require.NoError(t, err, tt.raw)
		require.Equal(t, tt.want, got, tt.raw)
		back, err := ParseBudgetListQuery(tt.want.Values())
		require.NoError(t, err, tt.raw)
		require.Equal(t, tt.want, back, tt.raw)
	}
	require.Nil(t, BudgetListQuery{}.Values())
	require.Equal(t, "parent=t%2Fx&state=true", BudgetListQuery{State: true, Parent: "t/x"}.Values().Encode())
}

func TestParseWhatIf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw  string
		want WhatIf
		err  string
	}{
		{raw: "", want: WhatIf{}},
		{raw: "allocation=5", want: WhatIf{Allocation: Ptr[int64](5)}},
		{raw: "allocation=0&duration_ms=60000&burst=9", want: WhatIf{Allocation: Ptr[int64](0), DurationMs: Ptr[int64](60000), Burst: Ptr[int64](9)}},
		{raw: "burst=9223372036854775807", want: WhatIf{Burst: Ptr[int64](9223372036854775807)}},
		{raw: "burst=9223372036854775808", err: `invalid query parameters: burst must be a non-negative integer, not "9223372036854775808"`},
		{raw: "allocation=-1", err: `invalid query parameters: allocation must be a non-negative integer, not "-1"`},
		{raw: "duration_ms=1h", err: `invalid query parameters: duration_ms must be a non-negative integer, not "1h"`},
		{raw: "allocation=", err: `invalid query parameters: allocation must be a non-negative integer, not ""`},
		{raw: "allocation=1&allocation=2", err: "invalid query parameters: duplicate field `allocation`"},
		{raw: "rate=3", err: "invalid query parameters: unknown field `rate`, expected one of `allocation`, `duration_ms`, `burst`"},
	}
	for _, tt := range tests {
		got, err := ParseWhatIf(mustQuery(t, tt.raw))
		if tt.err != "" {
			var qe *QueryError
			require.ErrorAs(t, err, &qe, tt.raw)
			require.EqualError(t, err, tt.err, tt.raw)
			continue
		}
		require.NoError(t, err, tt.raw)
		require.Equal(t, tt.want, got, tt.raw)
		require.Equal(t, tt.raw == "", got.IsZero(), tt.raw)
		back, err := ParseWhatIf(tt.want.Values())
		require.NoError(t, err, tt.raw)
		require.Equal(t, tt.want, back, tt.raw)
	}
	require.Nil(t, WhatIf{}.Values())
}

func TestParseRange(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want *Range
		err  string
	}{
		{in: "0", want: rng(u64(0), u64(0))},
		{in: "007", want: rng(u64(7), u64(7))},
		{in: "3..", want: rng(u64(3), nil)},
		{in: "..3", want: rng(nil, u64(3))},
		{in: "2..3", want: rng(u64(2), u64(3))},
		{in: "..", want: nil},
		{in: "", err: `invalid query parameters: f: invalid number ""`},
		{in: "x..", err: `invalid query parameters: f: invalid number "x"`},
		{in: "..x", err: `invalid query parameters: f: invalid number "x"`},
		{in: "1.5", err: `invalid query parameters: f: invalid number "1.5"`},
		{in: "0x10", err: `invalid query parameters: f: invalid number "0x10"`},
		{in: "1_000", err: `invalid query parameters: f: invalid number "1_000"`},
		{in: "11", err: "invalid query parameters: f: 11 is out of range (max 10)"},
		{in: "4..3", err: "invalid query parameters: range lower bound exceeds upper bound"},
	}
	for _, tt := range tests {
		got, err := parseRange("f", tt.in, 10)
		if tt.err != "" {
			require.EqualError(t, err, tt.err, tt.in)
			continue
		}
		require.NoError(t, err, tt.in)
		require.Equal(t, tt.want, got, tt.in)
	}
}

func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"", "..", "1", "1..2", "..5", "5..", "2..1", "-1", "18446744073709551615", "18446744073709551616", "1...2", "..."} {
		f.Add(s, uint64(65535))
	}
	f.Add("4294967295..", uint64(4294967295))
	f.Add("0..18446744073709551615", uint64(18446744073709551615))
	f.Fuzz(func(t *testing.T, s string, max uint64) {
		r, err := parseRange("f", s, max)
		if err != nil {
			var qe *QueryError
			require.ErrorAs(t, err, &qe)
			require.True(t, strings.HasPrefix(err.Error(), "invalid query parameters: "))
			return
		}
		if r == nil {
			require.Equal(t, "..", s)
			return
		}
		require.True(t, r.Lo != nil || r.Hi != nil)
		if r.Lo != nil {
			require.LessOrEqual(t, *r.Lo, max)
		}
		if r.Hi != nil {
			require.LessOrEqual(t, *r.Hi, max)
		}
		if r.Lo != nil && r.Hi != nil {
			require.LessOrEqual(t, *r.Lo, *r.Hi)
		}
		back, err := parseRange("f", r.String(), max)
		require.NoError(t, err)
		require.Equal(t, r, back)
	})
}

func FuzzParseJobQuery(f *testing.F) {
	for _, s := range []string{
		"",
		"queue=a,b&type=x&status=ready,dead",
		"id=" + id1 + "&priority=1..5&ready_at=..10&attempts=3",
		"filter=.a+%3D%3D+1&order=desc&limit=10&from=" + id2,
		"budgets.key=k1,k2&queue=a%26b&queue=c",
		"priority=..&limit=2000",
		"parked=true&status=ready",
		"status=running",
		"limit=0",
		"bogus=1",
		"from=%00%FF&queue=%E2%80%A8",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		for _, paging := range []bool{false, true} {
			q, err := ParseJobQuery(v, paging)
			if err != nil {
				var qe *QueryError
				require.ErrorAs(t, err, &qe)
				continue
			}
			// What the client sends is read back as what it meant.
			sent, err := url.ParseQuery(q.Values(paging).Encode())
			require.NoError(t, err)
			again, err := ParseJobQuery(sent, paging)
			require.NoError(t, err, "%v", sent)
			require.Equal(t, q, again, "%v", sent)

			link := q.Link(q.From, q.Order)
			followed, err := ParseJobsLink(link)
			require.NoError(t, err, link)
			require.Equal(t, q, followed, link)
			rest, ok := strings.CutPrefix(link, "/jobs?")
			require.True(t, ok, link)
			back, err := url.ParseQuery(rest)
			require.NoError(t, err, link)
			q2, err := ParseJobQuery(back, true)
			require.NoError(t, err, link)
			require.Equal(t, q, q2, link)
		}
	})
}

// FuzzQueryValues checks the other query strings both ways: whatever
// parses renders (Values) as a query string that parses back the same.
func FuzzQueryValues(f *testing.F) {
	for _, s := range []string{"", "queue=b,a&prefetch=0", "prefetch=1", "prefetch=2147483648&queue=%2C", "from=0", "from=7&order=desc&limit=2000", "state=1", "state=false", "parent=a%2Fb&state=true", "allocation=3&burst=0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		reparse := func(v url.Values) url.Values {
			back, err := url.ParseQuery(v.Encode())
			require.NoError(t, err)
			return back
		}
		if q, err := ParseTakeQuery(v); err == nil {
			back, err := ParseTakeQuery(reparse(q.Values()))
			require.NoError(t, err)
			require.Equal(t, q, back)
		}
		if q, err := ParseErrorsQuery(v); err == nil {
			back, err := ParseErrorsQuery(reparse(q.Values()))
			require.NoError(t, err)
			require.Equal(t, q, back)
			id, followed, err := ParseErrorsLink(q.Link(id1))
			require.NoError(t, err)
			require.Equal(t, id1, id)
			require.Equal(t, q, followed)
		}
		if state, err := ParseStateQuery(v); err == nil {
			back, err := ParseStateQuery(reparse(StateValues(state)))
			require.NoError(t, err)
			require.Equal(t, state, back)
		}
		if q, err := ParseBudgetListQuery(v); err == nil {
			back, err := ParseBudgetListQuery(reparse(q.Values()))
			require.NoError(t, err)
			require.Equal(t, q, back)
		}
		if w, err := ParseWhatIf(v); err == nil {
			back, err := ParseWhatIf(reparse(w.Values()))
			require.NoError(t, err)
			require.Equal(t, w, back)
		}
	})
}
