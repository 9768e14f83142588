package main

import (
	"context"
	"fmt"
	"time"

	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/store"
)

// seedBatchSize is how many schools one upsert transaction carries.
const seedBatchSize = 500

func init() {
	register("seed", command{
		usage: "seed [--count 6500] [--seed 1] [--force]",
		help:  "fill an empty catalogue with generated schools in all 50 states and DC",
		run:   runSeed,
	})
}

func runSeed(ctx context.Context, e env, args []string) error {
	fs := e.flagSet("seed")
	count := fs.Int("count", catalog.DefaultSeedCount, "number of schools to generate")
	seed := fs.Uint64("seed", 1, "generator seed; the same seed gives the same catalogue")
	force := fs.Bool("force", false, "upsert even when the catalogue already has schools")
	if err := fs.Parse(args); err != nil {
		return usageErr("%v", err)
	}
	if fs.NArg() > 0 {
		return usageErr("unexpected argument %q", fs.Arg(0))
	}
	if *count < 1 || *count > 1_000_000 {
		return usageErr("--count must be between 1 and 1000000")
	}

	start := time.Now()
	pool, err := store.Open(ctx, e.cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	st := store.New(pool)

	existing, err := st.CountSchools(ctx)
	if err != nil {
		return err
	}
	if existing > 0 && !*force {
		_, err := fmt.Fprintf(e.stdout, "catalogue already has %d schools; nothing to do\n", existing)
		return err
	}

	if *force {
		bySource, err := st.ActiveSchoolsBySource(ctx)
		if err != nil {
			return err
		}
		if imported := existing - bySource[catalog.SourceSeed]; imported > 0 {
			return fmt.Errorf("the catalogue holds %d imported schools; --force would mix generated schools with real ones", imported)
		}
	}

	schools := catalog.Generate(*count, *seed)
	var total store.UpsertResult
	for lo := 0; lo < len(schools); lo += seedBatchSize {
		hi := min(lo+seedBatchSize, len(schools))
		res, err := st.UpsertSchools(ctx, schools[lo:hi])
		if err != nil {
			return fmt.Errorf("upsert schools %d-%d of %d: %w", lo+1, hi, len(schools), err)
		}
		total.Inserted += res.Inserted
		total.Updated += res.Updated
		total.Unchanged += res.Unchanged
	}

	// A smaller --force catalogue retires the generated schools it no longer has.
	ids := make([]string, len(schools))
	for i, s := range schools {
		ids[i] = s.ID
	}
	retired, err := st.DeactivateSchoolsNotIn(ctx, catalog.SourceSeed, ids)
	if err != nil {
		return err
	}
	if retired > 0 {
		fmt.Fprintf(e.stdout, "retired %d generated schools beyond --count %d\n", retired, *count)
	}

	states, dc := map[string]bool{}, false
	for _, s := range schools {
		if s.State == "DC" {
			dc = true
			continue
		}
		states[s.State] = true
	}
	where := fmt.Sprintf("%d states", len(states))
	if dc {
		where += " and DC"
	}
	_, err = fmt.Fprintf(e.stdout, "seeded %d schools in %s (seed %d: %d new, %d updated, %d unchanged) in %.1fs\n",
		len(schools), where, *seed, total.Inserted, total.Updated, total.Unchanged, time.Since(start).Seconds())
	return err
}
