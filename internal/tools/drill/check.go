package drill

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// verdict is what PostgreSQL holds for a drill's students, held against
// what the load was answered.
type verdict struct {
	stored int // swipes stored (each under its swipe_id)
	// lost: swipes answered 2xx that are not stored.
	lost int
	// doubled: more than one row for a swipe_id, rows under a swipe_id the
	// load never sent, a student's swipe_count above their stored counted
	// swipes (or below: a count that disagrees is a count that is wrong),
	// counts on the rows that are not 1..n, and 2xx answers whose
	// swipe_count is not the stored row's.
	doubled int
	// unlearned: students whose learned state has not folded in their
	// latest stored swipe.
	unlearned int
	// undelivered: stored counted swipes without a swipe.recorded event,
	// and events the receiver has not had.
	undelivered int
	problems    []string // a few examples, for the report
}

func (v *verdict) note(format string, args ...any) {
	if len(v.problems) < 8 {
		v.problems = append(v.problems, fmt.Sprintf(format, args...))
	}
}

// check reads the students' swipes, counts, learned states and events
// (directly, not through the fault proxy) and holds them against sent.
func check(ctx context.Context, pool *pgxpool.Pool, students []string, sent map[string]*swipe, recv *receiver) (verdict, error) {
	var v verdict
	type row struct {
		id      int64
		client  *string
		count   *int
		counted bool
	}
	type student struct {
		rows        []row
		counted     int
		lastSwipe   int64
		swipeCount  int
		learnedUpTo int64
		events      map[int64]int64 // swipe id -> outbox id
	}
	byStudent := map[string]*student{}
	for _, s := range students {
		byStudent[s] = &student{events: map[int64]int64{}}
	}
	rows, err := pool.Query(ctx, `SELECT student_id::text, id, client_id, swipe_count, counted FROM swipes
		WHERE student_id = ANY($1::uuid[]) ORDER BY id`, students)
	if err != nil {
		return v, err
	}
	perClient := map[string]int{}
	for rows.Next() {
		var sid string
		var r row
		if err := rows.Scan(&sid, &r.id, &r.client, &r.count, &r.counted); err != nil {
			rows.Close()
			return v, err
		}
		st := byStudent[sid]
		st.rows = append(st.rows, r)
		st.lastSwipe = max(st.lastSwipe, r.id)
		if r.counted {
			st.counted++
		}
		v.stored++
		if r.client == nil {
			v.doubled++
			v.note("swipe %d of student %s has no swipe_id", r.id, sid)
			continue
		}
		perClient[sid+"/"+*r.client]++
		sw, ok := sent[*r.client]
		switch {
		case !ok || sw.student != sid:
			v.doubled++
			v.note("swipe %d of student %s has a swipe_id the load never sent for them", r.id, sid)
		case sw.acked && r.count != nil && *r.count != sw.count:
			v.doubled++
			v.note("swipe %s was answered swipe_count %d, its row says %d", *r.client, sw.count, *r.count)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return v, err
	}
	for k, n := range perClient {
		if n > 1 {
			v.doubled += n - 1
			v.note("%d rows for swipe_id %s", n, k)
		}
	}
	for id, sw := range sent {
		if sw.acked && perClient[sw.student+"/"+id] == 0 {
			v.lost++
			v.note("swipe %s was answered 2xx and is not stored", id)
		}
	}

	if err := scanEach(ctx, pool, `SELECT id::text, swipe_count FROM students WHERE id = ANY($1::uuid[])`, students,
		func(sid string, n int64) { byStudent[sid].swipeCount = int(n) }); err != nil {
		return v, err
	}
	if err := scanEach(ctx, pool, `SELECT student_id::text, last_swipe_id FROM learning_state WHERE student_id = ANY($1::uuid[])`,
		students, func(sid string, n int64) { byStudent[sid].learnedUpTo = n }); err != nil {
		return v, err
	}
	rows, err = pool.Query(ctx, `SELECT student_id::text, id, (payload->>'swipe_id')::bigint FROM outbox
		WHERE topic = 'swipe.recorded' AND student_id = ANY($1::uuid[])`, students)
	if err != nil {
		return v, err
	}
	for rows.Next() {
		var sid string
		var outbox, swipeID int64
		if err := rows.Scan(&sid, &outbox, &swipeID); err != nil {
			rows.Close()
			return v, err
		}
		byStudent[sid].events[swipeID] = outbox
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return v, err
	}

	for sid, st := range byStudent {
		if st.swipeCount != st.counted {
			v.doubled += max(st.swipeCount-st.counted, st.counted-st.swipeCount)
			v.note("student %s: swipe_count %d, %d counted swipes stored", sid, st.swipeCount, st.counted)
		}
		seen := map[int]bool{}
		for _, r := range st.rows {
			if !r.counted || r.count == nil {
				continue
			}
			if *r.count < 1 || *r.count > st.counted || seen[*r.count] {
				v.doubled++
				v.note("student %s: swipe %d holds count %d of %d", sid, r.id, *r.count, st.counted)
			}
			seen[*r.count] = true
		}
		if st.learnedUpTo < st.lastSwipe {
			v.unlearned++
			v.note("student %s: learned up to swipe %d, latest %d", sid, st.learnedUpTo, st.lastSwipe)
		}
		for _, r := range st.rows {
			if !r.counted {
				continue
			}
			outbox, ok := st.events[r.id]
			switch {
			case !ok:
				v.undelivered++
				v.note("swipe %d has no swipe.recorded event", r.id)
			case !recv.received(outbox):
				v.undelivered++
				v.note("event %d (swipe %d) has not reached the receiver", outbox, r.id)
			}
		}
	}
	return v, nil
}

// scanEach runs a query of (text, bigint) rows over the students.
func scanEach(ctx context.Context, pool *pgxpool.Pool, q string, students []string, f func(string, int64)) error {
	rows, err := pool.Query(ctx, q, students)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var n int64
		if err := rows.Scan(&k, &n); err != nil {
			return err
		}
		f(k, n)
	}
	return rows.Err()
}
