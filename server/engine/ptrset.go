package engine

// ptrSet is a set of pointers that ranges as a slice. A budget's served
// groups are ranged over on every change of the budget, and ranging over a
// map costs a random start and a walk of its table even for one member;
// adding and removing are rare (a group attaches or detaches). Small sets
// are searched; a large one keeps an index. The first member lives in the
// set itself: a sub-budget serves one group, and an array of its own would
// be one more cold line on each of its dispatches.
type ptrSet[T comparable] struct {
	list []T
	at   map[T]int // index in list, once the set is larger than ptrSetSmall
	one  [1]T      // list's array while it holds at most one member
}

// ptrSetSmall is the most members a set finds by searching its list.
const ptrSetSmall = 8

func (s *ptrSet[T]) len() int { return len(s.list) }

// index returns x's index in list, or -1.
func (s *ptrSet[T]) index(x T) int {
	if s.at != nil {
		if i, ok := s.at[x]; ok {
			return i
		}
		return -1
	}
	for i, y := range s.list {
		if y == x {
			return i
		}
	}
	return -1
}

func (s *ptrSet[T]) has(x T) bool { return s.index(x) >= 0 }

// add inserts x; it does nothing when x is a member.
func (s *ptrSet[T]) add(x T) {
	if s.index(x) >= 0 {
		return
	}
	if s.list == nil {
		s.list = s.one[:0:1]
	}
	s.list = append(s.list, x)
	switch {
	case s.at != nil:
		s.at[x] = len(s.list) - 1
	case len(s.list) > ptrSetSmall:
		s.at = make(map[T]int, len(s.list))
		for i, y := range s.list {
			s.at[y] = i
		}
	}
}

// remove deletes x, moving the last member to its place; it does nothing
// when x is not a member.
func (s *ptrSet[T]) remove(x T) {
	i := s.index(x)
	if i < 0 {
		return
	}
	last := len(s.list) - 1
	s.list[i] = s.list[last]
	var zero T
	s.list[last] = zero
	s.list = s.list[:last]
	if s.at == nil {
		return
	}
	delete(s.at, x)
	if i < last {
		s.at[s.list[i]] = i
	}
	if len(s.list) == 0 {
		s.at = nil
	}
}

// acctSet is a set of budgets each of which keeps its own place in it, in
// the field pos selects (index+1; 0: not a member), so adding and removing
// hash nothing: a queue's heads change on every dispatch of a family job.
type acctSet struct {
	list []*account
	pos  func(*account) *int32
}

func (s *acctSet) add(a *account) {
	p := s.pos(a)
	if *p != 0 {
		return
	}
	s.list = append(s.list, a)
	*p = int32(len(s.list))
}

// remove deletes a, moving the last member to its place.
func (s *acctSet) remove(a *account) {
	p := s.pos(a)
	if *p == 0 {
		return
	}
	i, last := int(*p-1), len(s.list)-1
	moved := s.list[last]
	s.list[i] = moved
	*s.pos(moved) = int32(i + 1)
	s.list[last] = nil
	s.list = s.list[:last]
	*p = 0
}
