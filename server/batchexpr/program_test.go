package batchexpr

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testLimits has a deadline of a minute, so that the tests of other limits
// meet them however slow the machine; the tests of the deadline set theirs.
var testLimits = Limits{Timeout: time.Minute, MaxPayloadBytes: 1 << 20}

func mustCompile(t *testing.T, when, fold string) *Program {
	t.Helper()
	p, err := Compile(Config{When: when, Fold: fold})
	require.NoError(t, err)
	return p
}

func value(t *testing.T, payload string) any {
	t.Helper()
	v, err := Decode([]byte(payload))
	require.NoError(t, err)
	return v
}

func TestCompile(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		when, fold, err string
	}{
		"Simple":          {when: "true", fold: "$existing"},
		"BothVariables":   {when: "($existing.items | length) < 3", fold: "$existing | .items += $new.items"},
		"BadWhen":         {when: ".[*]", fold: "$existing", err: "batch expression: when: "},
		"BadFold":         {when: "true", fold: ".[*]", err: "batch expression: fold: "},
		"UndefinedGlobal": {when: "$bogus", fold: "$existing", err: "batch expression: when: variable not defined: $bogus"},
		"NoInput":         {when: "input", fold: "$new", err: "batch expression: when: "},
		"NoModules":       {when: "true", fold: `import "a" as a; $new`, err: "batch expression: fold: "},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Compile(Config{When: tc.when, Fold: tc.fold})
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			var e *Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, StageExpression, e.Stage)
			require.True(t, strings.HasPrefix(err.Error(), tc.err), "got %q", err)
		})
	}
}

func TestProgram_Fold(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		when, fold, existing, incoming string
		folds                          bool
		want, err                      string
	}{
		"WhenTrue":          {when: "true", fold: "$existing + $new", existing: "[1,2]", incoming: "[3,4]", folds: true, want: "[1,2,3,4]"},
		"WhenFalse":         {when: "false", fold: "$existing + $new", existing: "[1]", incoming: "[2]"},
		"WhenNull":          {when: "null", fold: "$new", existing: "{}", incoming: "{}"},
		"WhenNoOutput":      {when: "empty", fold: "$new", existing: "{}", incoming: "{}"},
		"WhenFirstOutput":   {when: "true, false", fold: "$new", existing: "1", incoming: "2", folds: true, want: "2"},
		"WhenRuntimeError":  {when: "$existing[0]", fold: "$new", existing: "42", incoming: "{}"},
		"WhenUsesExisting":  {when: "($existing.items | length) < 3", fold: "$new", existing: `{"items":[1,2,3]}`, incoming: "{}"},
		"WhenUsesNew":       {when: "$new.ok == true", fold: "$new", existing: "{}", incoming: `{"ok":true}`, folds: true, want: `{"ok":true}`},
		"NestedField":       {when: "true", fold: "$existing | .items += $new.items", existing: `{"items":[1]}`, incoming: `{"items":[2,3]}`, folds: true, want: `{"items":[1,2,3]}`},
		"PipeAssign":        {when: "true", fold: "$existing | . += $new", existing: `[{"a":1}]`, incoming: `[{"a":2}]`, folds: true, want: `[{"a":1},{"a":2}]`},
		"ArrayConstructor":  {when: "true", fold: "$existing | [.[], $new[]]", existing: `[{"a":1}]`, incoming: `[{"a":2}]`, folds: true, want: `[{"a":1},{"a":2}]`},
		"Dedup":             {when: "true", fold: "$existing | .d = (.d + $new.d | unique)", existing: `{"d":["a","b"]}`, incoming: `{"d":["b","c"]}`, folds: true, want: `{"d":["a","b","c"]}`},
		"LastWins":          {when: "true", fold: "$new", existing: `{"a":1}`, incoming: `{"b":2}`, folds: true, want: `{"b":2}`},
		"KeysSorted":        {when: "true", fold: "$existing + $new", existing: `{"z":1,"a":[true,null]}`, incoming: `{"m":"é\u2028<&>"}`, folds: true, want: `{"a":[true,null],"m":"é\u2028<&>","z":1}`},
		"IntegerPrecision":  {when: "true", fold: "9007199254740993", existing: "{}", incoming: "{}", folds: true, want: "9007199254740993"},
		"NegativePrecision": {when: "true", fold: "-9007199254740993", existing: "{}", incoming: "{}", folds: true, want: "-9007199254740993"},
		"DigitsKept":        {when: "true", fold: "[$existing, $new]", existing: "18446744073709551615", incoming: "2.50", folds: true, want: "[18446744073709551615,2.50]"},
		"MultipleOutputs":   {when: "true", fold: "$existing, $new", existing: `"a"`, incoming: `"b"`, err: "batch fold failed: fold expression produced more than one output"},
		"NoOutput":          {when: "true", fold: "empty", existing: "1", incoming: "2", err: "batch fold failed: fold expression produced no output"},
		"RuntimeError":      {when: "true", fold: "$existing.a + $new.b", existing: "1", incoming: "2", err: "batch fold failed: fold expression failed at runtime: "},
		"NaN":               {when: "true", fold: "nan", existing: "1", incoming: "2", err: "batch fold failed: floating-point value NaN is not representable"},
		"Infinity":          {when: "true", fold: "infinite", existing: "1", incoming: "2", err: "batch fold failed: floating-point value +Inf is not representable"},
		"TooLarge":          {when: "true", fold: `"x" * 2000000`, existing: "1", incoming: "2", err: "batch fold failed: fold output exceeds the 1048576-byte payload limit"},
		"SparseArray":       {when: "true", fold: "null | .[2000000] = 1", existing: "1", incoming: "2", err: "batch fold failed: fold output exceeds the 1048576-byte payload limit"},
		"TooDeep":           {when: "true", fold: "reduce range(10001) as $i (null; [.])", existing: "1", incoming: "2", err: "batch fold failed: fold output nests deeper than 10000 levels"},
		"Loop":              {when: "true", fold: "def f: f; f", existing: "1", incoming: "2", err: "batch fold failed: fold expression took longer than 100ms"},
		"WhenLoop":          {when: "def f: f; f", fold: "$new", existing: "1", incoming: "2", err: "batch fold failed: when: expression took longer than 100ms"},
		"NoEnvironment":     {when: "true", fold: "$ENV | length", existing: "1", incoming: "2", folds: true, want: "0"},
		"NullInput":         {when: ". == null", fold: ".", existing: "1", incoming: "2", folds: true, want: "null"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := mustCompile(t, tc.when, tc.fold)
			lim := testLimits
			if strings.Contains(tc.err, "longer than") {
				lim.Timeout = 100 * time.Millisecond
			}
			ctx, cancel := context.WithTimeout(context.Background(), lim.Timeout)
			defer cancel()
			folds, out, err := p.Fold(ctx, value(t, tc.existing), value(t, tc.incoming), lim)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				require.True(t, strings.HasPrefix(err.Error(), tc.err), "got %q", err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.folds, folds)
			require.Equal(t, tc.want, string(out))
		})
	}
}

func TestProgram_DryRun(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		when, fold, payload, err string
	}{
		"Compatible":     {when: "($existing.items | length) < 3", fold: "$existing | .items += $new.items", payload: `{"items":[1]}`},
		"FalseIsFine":    {when: "false", fold: "$existing + $new", payload: "[1]"},
		"WhenShape":      {when: "$existing.items == null", fold: "$existing", payload: "[1,2]", err: "batch dry-run: when: expression failed at runtime: "},
		"FoldShape":      {when: "true", fold: "$existing | .foo += $new.foo", payload: "[1,2]", err: "batch dry-run: fold: fold expression failed at runtime: "},
		"FoldMultiple":   {when: "true", fold: "$existing, $new", payload: "{}", err: "batch dry-run: fold: fold expression produced more than one output"},
		"FoldNoOutput":   {when: "true", fold: "empty", payload: "{}", err: "batch dry-run: fold: fold expression produced no output"},
		"NodeWholeArray": {when: "(($existing | .) + ($new | .)) | length <= 100", fold: "$existing | . += ($new | .)", payload: `[{"id":1}]`},
		"NodeField":      {when: "(($existing | .items) + ($new | .items)) | length <= 50", fold: "$existing | .items = ((.items) + ($new | .items) | unique)", payload: `{"items":[2,1]}`},
		"NodeWrongShape": {when: "(($existing | .items) + ($new | .items)) | length <= 50", fold: "$existing | .items += ($new | .items)", payload: `"text"`, err: "batch dry-run: when: "},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := mustCompile(t, tc.when, tc.fold)
			err := p.DryRun(context.Background(), value(t, tc.payload), testLimits)
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			var e *Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, StageDryRun, e.Stage)
			require.True(t, strings.HasPrefix(err.Error(), tc.err), "got %q", err)
		})
	}
}

func TestProgramCache_CompilesOnce(t *testing.T) {
	t.Parallel()
	c := newProgramCache(2)
	a, err := c.get(Config{When: "true", Fold: "$new"})
	require.NoError(t, err)
	again, _ := c.get(Config{When: "true", Fold: "$new"})
	require.Same(t, a, again, "one compilation a pair")
	_, err = c.get(Config{When: "(", Fold: "$new"})
	require.Error(t, err)
	_, err = c.get(Config{When: "(", Fold: "$new"})
	require.Error(t, err, "a failure is kept too")
	_, _ = c.get(Config{When: "false", Fold: "$new"}) // the oldest goes
	evicted, _ := c.get(Config{When: "true", Fold: "$new"})
	require.NotSame(t, a, evicted)
	require.Equal(t, 2, c.order.Len())
}
