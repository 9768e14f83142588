package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/catalog/bundled"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/store"
)

// seedBatchSize is how many schools one upsert transaction carries.
const seedBatchSize = 500

func init() {
	register("seed", command{
		usage: "seed [--force] | seed --synthetic [--count 6500] [--seed 1] [--force]",
		help:  "fill an empty catalogue with the bundled real schools (College Scorecard extract), or generated ones",
		run:   runSeed,
	})
}

func runSeed(ctx context.Context, e env, args []string) error {
	fs := e.flagSet("seed")
	synthetic := fs.Bool("synthetic", false, "generate schools instead of loading the bundled real ones (tests and load runs)")
	count := fs.Int("count", catalog.DefaultSeedCount, "with --synthetic: number of schools to generate")
	seed := fs.Uint64("seed", 1, "with --synthetic: generator seed; the same seed gives the same catalogue")
	force := fs.Bool("force", false, "upsert even when the catalogue already has schools")
	if err := fs.Parse(args); err != nil {
		return usageErr("%v", err)
	}
	if fs.NArg() > 0 {
		return usageErr("unexpected argument %q", fs.Arg(0))
	}
	var generatorFlags []string
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "count" || f.Name == "seed" {
			generatorFlags = append(generatorFlags, "--"+f.Name)
		}
	})
	if !*synthetic && len(generatorFlags) > 0 {
		return usageErr("%s sets up generated schools and needs --synthetic (without it, seed loads the bundled real schools)", generatorFlags[0])
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
		if _, err := fmt.Fprintf(e.stdout, "catalogue already has %d schools; nothing to do\n", existing); err != nil || *synthetic {
			return err
		}
		bySource, err := st.ActiveSchoolsBySource(ctx)
		if err != nil {
			return err
		}
		if bySource[catalog.SourceSeed] == existing {
			_, err = fmt.Fprintln(e.stdout, "they are all generated: matchctl seed --force replaces them with the bundled real schools")
		}
		return err
	}
	if *synthetic {
		return seedSynthetic(ctx, e, st, *count, *seed, *force, existing, start)
	}
	return seedBundled(ctx, e, st, start)
}

// seedBundled loads the bundled real catalogue as an import of it would:
// each school merged over the stored one with its id, then the generated
// schools retired (real and invented schools are never served together).
func seedBundled(ctx context.Context, e env, st *store.Store, start time.Time) error {
	schools, err := bundled.Schools()
	if err != nil {
		return err
	}
	var total store.UpsertResult
	for lo := 0; lo < len(schools); lo += seedBatchSize {
		hi := min(lo+seedBatchSize, len(schools))
		merged, _, err := mergeWithStored(ctx, st, schools[lo:hi], false)
		if err != nil {
			return err
		}
		res, err := st.UpsertSchools(ctx, merged)
		if err != nil {
			return fmt.Errorf("upsert schools %d-%d of %d: %w", lo+1, hi, len(schools), err)
		}
		total.Inserted += res.Inserted
		total.Updated += res.Updated
		total.Unchanged += res.Unchanged
	}
	retired, err := st.DeactivateSchoolsNotIn(ctx, catalog.SourceSeed, []string{})
	if err != nil {
		return err
	}
	if retired > 0 {
		fmt.Fprintf(e.stdout, "retired %d generated schools\n", retired)
	}
	_, err = fmt.Fprintf(e.stdout, "seeded %d real schools in %s (%s; %d new, %d updated, %d unchanged) in %.1fs\n",
		len(schools), where(schools), bundled.Description, total.Inserted, total.Updated, total.Unchanged,
		time.Since(start).Seconds())
	return err
}

// seedSynthetic fills the catalogue with generated schools.
func seedSynthetic(ctx context.Context, e env, st *store.Store, count int, seed uint64, force bool, existing int, start time.Time) error {
	if force {
		bySource, err := st.ActiveSchoolsBySource(ctx)
		if err != nil {
			return err
		}
		if imported := existing - bySource[catalog.SourceSeed]; imported > 0 {
			return fmt.Errorf("the catalogue holds %d imported schools; --force would mix generated schools with real ones", imported)
		}
	}

	schools := catalog.Generate(count, seed)
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
		fmt.Fprintf(e.stdout, "retired %d generated schools beyond --count %d\n", retired, count)
	}
	_, err = fmt.Fprintf(e.stdout, "seeded %d generated schools in %s (seed %d: %d new, %d updated, %d unchanged) in %.1fs\n",
		len(schools), where(schools), seed, total.Inserted, total.Updated, total.Unchanged, time.Since(start).Seconds())
	return err
}

// where says how many states (and whether DC) schools are in.
func where(schools []domain.School) string {
	states, dc := map[string]bool{}, false
	for _, s := range schools {
		if s.State == "DC" {
			dc = true
			continue
		}
		states[s.State] = true
	}
	out := fmt.Sprintf("%d states", len(states))
	if dc {
		out += " and DC"
	}
	return out
}
