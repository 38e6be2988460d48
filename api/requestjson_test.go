package api

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

// bindReq is a binding request of a key and a cost.
func bindReq(key string, cost int64) BindingRequest { return BindingRequest{Key: &key, Cost: &cost} }

// TestMarshal_BulkEnqueue: whatever bulk appendBulkEnqueueJSON writes, the
// general encoder writes byte for byte, and a bulk it declines is the
// general encoder's.
func TestMarshal_BulkEnqueue(t *testing.T) {
	t.Parallel()
	plain := EnqueueRequest{Type: Ptr("bench"), Queue: Ptr("q"), Payload: Payload(`{"i":1,"t":2,"pad":"x y"}`)}
	for name, b := range map[string]BulkEnqueueRequest{
		"Empty":        {Jobs: []EnqueueRequest{}},
		"Nil":          {},
		"Plain":        {Jobs: []EnqueueRequest{plain, plain}},
		"Fields":       {Jobs: []EnqueueRequest{{Type: Ptr(""), Priority: Ptr(uint16(65535)), Payload: Payload(`[1,"a\"b",{}]`)}, {}}},
		"Budgets":      {Jobs: []EnqueueRequest{{Type: Ptr("t"), Budgets: []BindingRequest{bindReq("a", 1), bindReq("f/b", 0)}}}},
		"NotCompact":   {Jobs: []EnqueueRequest{plain, {Type: Ptr("t"), Payload: Payload(`{ "a" : 1 }`)}}},
		"Escape":       {Jobs: []EnqueueRequest{{Type: Ptr(`a"b`), Queue: Ptr("é\n")}}},
		"OtherField":   {Jobs: []EnqueueRequest{plain, {Type: Ptr("t"), ReadyAt: Ptr(uint64(5)), StartWithinMs: Ptr(int64(7))}}},
		"BindNoCost":   {Jobs: []EnqueueRequest{{Type: Ptr("t"), Budgets: []BindingRequest{{Key: Ptr("k")}}}}},
		"BindEscapes":  {Jobs: []EnqueueRequest{{Type: Ptr("t"), Budgets: []BindingRequest{bindReq("é", 1)}}}},
		"EmptyBudgets": {Jobs: []EnqueueRequest{{Type: Ptr("t"), Budgets: []BindingRequest{}}}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			general, err := appendJSON(nil, b)
			require.NoError(t, err)
			for _, v := range []any{b, &b} {
				got, err := Marshal(JSON, v)
				require.NoError(t, err)
				require.Equal(t, string(general), string(got))
			}
		})
	}
}

// TestAppendEnqueueJSON_Declines: a field added to EnqueueRequest is not
// silently dropped: the appender writes only the fields it names, and any
// other one declines, as do strings that need escaping and payloads that
// are not compact valid JSON.
func TestAppendEnqueueJSON_Declines(t *testing.T) {
	t.Parallel()
	written := map[string]bool{"Type": true, "Queue": true, "Payload": true, "Priority": true, "Budgets": true}
	typ := reflect.TypeFor[EnqueueRequest]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		if written[f.Name] {
			continue
		}
		var r EnqueueRequest
		v := reflect.ValueOf(&r).Elem().Field(i)
		switch v.Kind() {
		case reflect.Pointer:
			v.Set(reflect.New(f.Type.Elem()))
		case reflect.Slice:
			v.Set(reflect.MakeSlice(f.Type, 1, 1))
		default:
			t.Fatalf("field %s: a %s; teach this test to set it", f.Name, v.Kind())
		}
		_, ok := appendEnqueueJSON(nil, &r)
		require.False(t, ok, "field %s", f.Name)
	}
	for name, r := range map[string]EnqueueRequest{
		"Escape":     {Type: Ptr(`a"b`)},
		"Control":    {Queue: Ptr("a\tb")},
		"BindKey":    {Budgets: []BindingRequest{bindReq(`x\y`, 1)}},
		"CreateWith": {Budgets: []BindingRequest{{Key: Ptr("k"), Cost: Ptr(int64(1)), CreateWith: &BudgetInput{}}}},
		"Invalid":    {Payload: Payload(`{"a":`)},
		"Spaced":     {Payload: Payload(`[1, 2]`)},
	} {
		_, ok := appendEnqueueJSON(nil, &r)
		require.False(t, ok, name)
	}
	_, ok := appendEnqueueJSON(nil, &EnqueueRequest{Type: Ptr("t"), Payload: Payload(`{"s":"a b"}`), Budgets: []BindingRequest{bindReq("k", 2)}})
	require.True(t, ok, "a space inside a string is the payload's own")
}
