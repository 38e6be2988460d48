// Package chunk looks rows up by ID in queries of a bounded number of IDs,
// for both stores.
package chunk

import "slices"

// ByID calls query with the distinct IDs of ids, in order, at most size at
// a time, and returns what the calls appended; nil for no IDs. Duplicates
// would otherwise come back twice.
func ByID[T any](ids []string, size int, query func(out []T, ids []string) ([]T, error)) ([]T, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	out := make([]T, 0, len(ids))
	for len(ids) > 0 {
		batch := ids[:min(size, len(ids))]
		ids = ids[len(batch):]
		var err error
		if out, err = query(out, batch); err != nil {
			return nil, err
		}
	}
	return out, nil
}
