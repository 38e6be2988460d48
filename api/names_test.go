package api

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidateName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		field string
		value string
		want  string // "" for valid
	}{
		{"Plain", "queue", "emails", ""},
		{"Punctuation", "type", "send-email.v2:fast/slow@x_y", ""},
		{"Unicode", "queue", "café ☕", ""},
		{"Space", "queue", "a b", ""},
		{"Empty", "queue", "", "queue must not be empty"},
		{"Comma", "type", "a,b", "type must not contain ','"},
		{"NullByte", "queue", "a\x00b", "queue must not contain null bytes"},
		{"CommaBeforeNull", "queue", "\x00,", "queue must not contain ','"},
		{"NullBeforeReserved", "queue", "*\x00", "queue must not contain null bytes"},
		{"Star", "queue", "a*", "queue must not contain '*' (reserved)"},
		{"Question", "queue", "a?", "queue must not contain '?' (reserved)"},
		{"OpenBracket", "queue", "[a", "queue must not contain '[' (reserved)"},
		{"CloseBracket", "queue", "a]", "queue must not contain ']' (reserved)"},
		{"OpenBrace", "queue", "{", "queue must not contain '{' (reserved)"},
		{"CloseBrace", "queue", "}", "queue must not contain '}' (reserved)"},
		{"Backslash", "queue", `a\b`, `queue must not contain '\' (reserved)`},
		{"FirstReservedWins", "cron group name", "a}[*", "cron group name must not contain '}' (reserved)"},
		{"CronEntry", "cron entry name", "", "cron entry name must not be empty"},
		{"InvalidUTF8", "queue", "a\xff", "queue must be valid UTF-8"},
		{"TruncatedUTF8", "type", "caf\xc3", "type must be valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := ValidateName(tt.field, tt.value)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tt.want)
		})
	}
}

func TestValidateBudgetKey(t *testing.T) {
	t.Parallel()
	require.NoError(t, ValidateBudgetKey("openai:gpt-4"))
	require.EqualError(t, ValidateBudgetKey(""), "budget key must not be empty")
	require.EqualError(t, ValidateBudgetKey("a,b"), "budget key must not contain ','")
	require.EqualError(t, ValidateBudgetKey("a\x00"), "budget key must not contain null bytes")
	require.EqualError(t, ValidateBudgetKey("a?"), "budget key must not contain '?' (reserved)")
	require.EqualError(t, ValidateBudgetKey("\xff"), "budget key must be valid UTF-8")
}

func TestValidJobID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		id   string
		want bool
	}{
		{"036z951mhjikzik2gsl81gr7l", true},
		{"0000000000000000000000000", true},
		{"zzzzzzzzzzzzzzzzzzzzzzzzz", true},
		{"", false},
		{"036z951mhjikzik2gsl81gr7", false},   // 24
		{"036z951mhjikzik2gsl81gr7ll", false}, // 26
		{"036Z951MHJIKZIK2GSL81GR7L", false},  // upper case
		{"036z951mhjikzik2gsl81gr7-", false},
		{"036z951mhjikzik2gsl81gr7é", false}, // 26 bytes
		{"036z951mhjikzik2gsl81gr7\x00", false},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, ValidJobID(tt.id), "%q", tt.id)
	}
}
