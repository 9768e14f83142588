// Package command is the write side: use cases that validate, write
// PostgreSQL in one transaction and hand work to the queue.
package command

import (
	"context"
	"fmt"

	"github.com/collegematch/matching/internal/domain"
)

// StudentStore is what onboarding needs from the database.
type StudentStore interface {
	Student(ctx context.Context, id string) (domain.Student, error)
	SaveStudent(ctx context.Context, s domain.Student) (domain.Student, bool, error)
	ZipCentroid(ctx context.Context, zip string) (lat, lon float64, state string, ok bool, err error)
}

// FeedInvalidator drops a student's precomputed feed once their profile
// has changed. It is best effort and reports nothing: a feed it could not
// drop expires with its TTL.
type FeedInvalidator interface {
	InvalidateFeed(ctx context.Context, studentID string)
}

// Onboarding creates and updates student profiles.
type Onboarding struct {
	store StudentStore
	feeds FeedInvalidator // optional
}

// Option configures Onboarding.
type Option func(*Onboarding)

// WithFeedInvalidator makes every saved profile invalidate the student's feed.
func WithFeedInvalidator(f FeedInvalidator) Option {
	return func(o *Onboarding) { o.feeds = f }
}

// NewOnboarding builds the onboarding use case.
func NewOnboarding(store StudentStore, opts ...Option) *Onboarding {
	if store == nil {
		panic("command.NewOnboarding: nil store")
	}
	o := &Onboarding{store: store}
	for _, opt := range opts {
		opt(o)
	}
	return o
}

// SaveProfile applies patch to the student (a new one when id is unknown)
// and stores it. A new student must have name, email and graduation year.
// A ZIP code is resolved to coordinates and a state when the ZIP table
// knows it; an unknown ZIP falls back to the state when one is given.
func (o *Onboarding) SaveProfile(ctx context.Context, id string, patch domain.ProfilePatch) (domain.Student, bool, error) {
	current, err := o.store.Student(ctx, id)
	isNew := domain.KindOf(err) == domain.KindNotFound
	if err != nil && !isNew {
		return domain.Student{}, false, err
	}
	if isNew {
		current = domain.Student{ID: id}
	}
	next := patch.Apply(current)
	missing := map[string]string{}
	for field, v := range map[string]string{"name": next.Name, "email": next.Email, "graduation_year": next.GraduationYear} {
		if v == "" {
			missing[field] = "is required"
		}
	}
	if len(missing) > 0 {
		return domain.Student{}, false, domain.Invalid(fmt.Sprintf("%d required fields are missing; see details.fields", len(missing)), missing)
	}
	if patch.Zip.Set && !patch.Zip.Null && !patch.Home.Set {
		lat, lon, state, ok, err := o.store.ZipCentroid(ctx, next.Zip)
		if err != nil {
			return domain.Student{}, false, err
		}
		switch {
		case ok:
			next.HomeLat, next.HomeLon = &lat, &lon
			if !patch.State.Set || patch.State.Null {
				next.State = state
			}
		case patch.State.Set && !patch.State.Null:
			// Unknown ZIP, but the state places the student.
		default:
			return domain.Student{}, false, domain.Invalid("zip "+next.Zip+" is not a known ZIP code",
				map[string]string{"zip": "is not a known ZIP code; send state (or home) as well"})
		}
	}
	saved, created, err := o.store.SaveStudent(ctx, next)
	if err == nil && !created && o.feeds != nil { // a new student has no feed yet
		o.feeds.InvalidateFeed(ctx, saved.ID)
	}
	return saved, created, err
}
