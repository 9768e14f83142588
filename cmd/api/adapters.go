package main

import (
	"context"

	"github.com/collegematch/matching/internal/query"
	"github.com/collegematch/matching/internal/store"
)

// students lets the read side load students through the store, whose
// rows it sees as query.StudentState (the store does not import query).
type students struct{ *store.Store }

func (s students) StudentState(ctx context.Context, id string) (query.StudentState, error) {
	st, err := s.Store.StudentState(ctx, id)
	return query.StudentState{Student: st.Student, Version: st.Version, Weights: st.Weights}, err
}
