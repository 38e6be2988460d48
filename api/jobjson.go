package api

import "strconv"

// appendBulkJobsJSON appends a BulkJobs as the general encoder writes it,
// each job by appendJobJSON (the answer to a bulk enqueue of a thousand);
// it answers false, appending nothing, when a job needs the general
// encoder or the list is nil (which that encoder writes as null).
func appendBulkJobsJSON(dst []byte, b *BulkJobs) ([]byte, bool) {
	if b.Jobs == nil {
		return dst, false
	}
	start := len(dst)
	dst = append(dst, `{"jobs":[`...)
	for i := range b.Jobs {
		if i > 0 {
			dst = append(dst, ',')
		}
		var ok bool
		if dst, ok = appendJobJSON(dst, &b.Jobs[i]); !ok {
			return dst[:start], false
		}
	}
	return append(dst, "]}"...), true
}

// appendJobJSON appends j as the general encoder writes it (the struct's
// field order, omitempty, the payload verbatim), which is most of a take
// stream's work per job: it answers false, appending nothing, when a
// string needs escaping, the payload is not in the fast path's canonical
// form (so never invalid), or a rarely set field (backoff, retention,
// batch) is set, and the caller then takes the general encoder.
func appendJobJSON(dst []byte, j *Job) ([]byte, bool) {
	if j.Backoff != nil || j.Retention != nil || j.Batch != nil ||
		len(j.Payload) > 0 && !isCanonical(j.Payload) || // validated, as the general encoder does
		!plainJSON(j.ID) || !plainJSON(j.Type) || !plainJSON(j.Queue) || !plainJSON(j.Status) ||
		!plainJSON(j.UniqueKey) || !plainJSON(j.UniqueWhile) {
		return dst, false
	}
	for _, b := range j.Budgets {
		if !plainJSON(b.Key) {
			return dst, false
		}
	}
	dst = appendField(dst, `{"id":`, j.ID)
	dst = appendField(dst, `,"type":`, j.Type)
	dst = appendField(dst, `,"queue":`, j.Queue)
	dst = strconv.AppendUint(append(dst, `,"priority":`...), uint64(j.Priority), 10)
	dst = appendField(dst, `,"status":`, j.Status)
	if len(j.Payload) > 0 {
		dst = append(append(dst, `,"payload":`...), j.Payload...)
	}
	dst = strconv.AppendUint(append(dst, `,"ready_at":`...), j.ReadyAt, 10)
	dst = strconv.AppendUint(append(dst, `,"attempts":`...), uint64(j.Attempts), 10)
	if j.RetryLimit != nil {
		dst = strconv.AppendUint(append(dst, `,"retry_limit":`...), uint64(*j.RetryLimit), 10)
	}
	dst = appendNonZero(dst, `,"dequeued_at":`, j.DequeuedAt)
	dst = appendNonZero(dst, `,"failed_at":`, j.FailedAt)
	dst = appendNonZero(dst, `,"purge_at":`, j.PurgeAt)
	dst = appendNonZero(dst, `,"completed_at":`, j.CompletedAt)
	if j.UniqueKey != "" {
		dst = appendField(dst, `,"unique_key":`, j.UniqueKey)
	}
	if j.UniqueWhile != "" {
		dst = appendField(dst, `,"unique_while":`, j.UniqueWhile)
	}
	if j.Duplicate != nil {
		dst = strconv.AppendBool(append(dst, `,"duplicate":`...), *j.Duplicate)
	}
	if j.Folded != nil {
		dst = strconv.AppendBool(append(dst, `,"folded":`...), *j.Folded)
	}
	if len(j.Budgets) > 0 {
		dst = append(dst, `,"budgets":[`...)
		for i, b := range j.Budgets {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendField(dst, `{"key":`, b.Key)
			dst = strconv.AppendInt(append(dst, `,"cost":`...), b.Cost, 10)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	dst = appendNonZero(dst, `,"start_by":`, j.StartBy)
	return append(dst, '}'), true
}

func appendField(dst []byte, name, s string) []byte {
	dst = append(dst, name...)
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

func appendNonZero(dst []byte, name string, v uint64) []byte {
	if v == 0 {
		return dst
	}
	return strconv.AppendUint(append(dst, name...), v, 10)
}

// plainJSON reports whether s is printable ASCII without a quote or a
// backslash: written in JSON as it is.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
