package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"

	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/tools/inspect"
)

// runExplain is `matchctl students explain`: see inspect.Explain.
func runExplain(ctx context.Context, e env, ids []string, limit int, asJSON bool) error {
	if len(ids) != 1 {
		return usageErr("explain needs exactly one student ID")
	}
	parsed, err := uuid.Parse(ids[0])
	if err != nil {
		return usageErr("student ID %q is not a UUID", ids[0])
	}
	if limit < 1 || limit > inspect.MaxItems {
		return usageErr("--limit must be between 1 and %d", inspect.MaxItems)
	}
	id := parsed.String()

	pool, err := store.Open(ctx, e.cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	rdb, _, err := cache.Open(ctx, e.cfg.RedisURL)
	if err != nil {
		return err
	}
	defer rdb.Close()
	// The read side's routine logs (catalogue loaded) would only clutter the answer.
	quiet := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: max(e.cfg.LogLevel, slog.LevelWarn)}))
	ex, err := inspect.Explain(ctx, inspect.Deps{DB: store.New(pool), Redis: rdb, FeedTTL: e.cfg.FeedCacheTTL,
		ImageBaseURL: e.cfg.ImageBaseURL, Log: quiet}, id, limit)
	if err != nil {
		return studentErr(err, id)
	}
	if asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(ex)
	}
	return printExplanation(e.stdout, ex)
}

func printExplanation(w io.Writer, ex inspect.Explanation) error {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("student %s: %s, %d swipes (progress %.2f)\n", ex.StudentID, ex.Phase, ex.SwipeCount, ex.Progress)
	if ex.Learned {
		p("learned model: %d swipes, %d other signals, %d feedback reasons folded in\n", ex.ModelSwipes, ex.ModelSignals, ex.ModelFeedback)
	} else {
		p("learned model: none yet; the weights are the prior\n")
	}
	if len(ex.Categories) > 0 {
		parts := make([]string, len(ex.Categories))
		for i, c := range ex.Categories {
			parts[i] = c.CategoryID + " " + c.Direction
		}
		p("onboarding categories: %s\n", strings.Join(parts, ", "))
	}
	p("\npreference weights (value ± posterior sd):\n")
	for _, k := range inspect.WeightOrder {
		wt := ex.Weights[k]
		p("  %-22s %.3f ± %.3f\n", k, wt.Value, wt.Uncertainty)
	}
	if len(ex.LearnedPreferences) > 0 {
		p("\nlearned beyond the weights (from the last %d schools swiped; how much each moves a score):\n", ex.ResidualSchools)
		for _, l := range ex.LearnedPreferences {
			p("  %-12s %+.3f  %s\n", l.Key, l.Strength, l.Text)
		}
	} else if ex.ResidualSchools > 0 {
		p("\nlearned beyond the weights: nothing yet (the last %d schools swiped are what the weights say)\n", ex.ResidualSchools)
	}
	f := ex.Feed
	p("\nfeed (%s, built %s from student version %d at %d swipes, %s): first %d of %d schools\n",
		f.Source, f.BuiltAt.Format(time.RFC3339), f.StudentVersion, f.TotalSwipes, f.AlgorithmVersion, len(f.Items), f.TotalCount)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tslot\tscore\tgrade\tband\tschool\treasons")
	for _, it := range f.Items {
		fmt.Fprintf(tw, "%d\t%s\t%.4f\t%s\t%s\t%s (%s, %s)\t%s\n", it.Position, it.Slot, it.MatchScore, it.MatchGrade,
			it.AdmissionBand, it.Name, it.City, it.State, strings.Join(it.Reasons, "; "))
	}
	return tw.Flush()
}
