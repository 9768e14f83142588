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
	UpdateStudent(ctx context.Context, id string, apply func(current domain.Student, exists bool) (domain.Student, error)) (domain.Student, bool, error)
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
	saved, created, err := o.store.UpdateStudent(ctx, id, func(current domain.Student, _ bool) (domain.Student, error) {
		return o.apply(ctx, current, patch)
	})
	if err == nil && !created && o.feeds != nil { // a new student has no feed yet
		o.feeds.InvalidateFeed(ctx, saved.ID)
	}
	return saved, created, err
}

// apply computes the new profile: the patch, the required fields, and the
// home location kept consistent with a new state or ZIP code.
func (o *Onboarding) apply(ctx context.Context, current domain.Student, patch domain.ProfilePatch) (domain.Student, error) {
	next := patch.Apply(current)
	missing := map[string]string{}
	for field, v := range map[string]string{"name": next.Name, "email": next.Email, "graduation_year": next.GraduationYear} {
		if v == "" {
			missing[field] = "is required"
		}
	}
	if len(missing) > 0 {
		return domain.Student{}, domain.Invalid(fmt.Sprintf("%d required fields are missing; see details.fields", len(missing)), missing)
	}
	movedWithoutPoint := !patch.Home.Set &&
		((patch.State.Set && !patch.State.Null && next.State != current.State) ||
			(patch.Zip.Set && !patch.Zip.Null && next.Zip != current.Zip))
	if movedWithoutPoint {
		// Coordinates from an earlier home, state or ZIP no longer place the
		// student: drop them, and let a known ZIP place them again below.
		next.HomeLat, next.HomeLon = nil, nil
	}
	if patch.Zip.Set && !patch.Zip.Null && !patch.Home.Set {
		lat, lon, state, ok, err := o.store.ZipCentroid(ctx, next.Zip)
		if err != nil {
			return domain.Student{}, err
		}
		switch {
		case ok && patch.State.Set && !patch.State.Null && patch.State.Value != state:
			return domain.Student{}, domain.Invalid("zip "+next.Zip+" is in "+state+", not "+patch.State.Value,
				map[string]string{"zip": "is in " + state + ", which contradicts state " + patch.State.Value})
		case ok:
			next.HomeLat, next.HomeLon = &lat, &lon
			next.State = state
		case patch.State.Set && !patch.State.Null:
			// Unknown ZIP, but the state places the student.
		default:
			return domain.Student{}, domain.Invalid("zip "+next.Zip+" is not a known ZIP code",
				map[string]string{"zip": "is not a known ZIP code; send state (or home) as well"})
		}
	}
	return next, nil
}
