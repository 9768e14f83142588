package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/catalog/bundled"
)

func TestGenWritesAndChecks(t *testing.T) {
	dir := t.TempDir()
	for _, s := range bundled.Steps {
		body := "id\tschool.name\tschool.state\n100001\tOld College\tOH\n"
		if s.File == bundled.Steps[2].File {
			body = "UNITID,APPLCN,ADMSSN\n100001,100,50\n"
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, s.File), []byte(body), 0o644))
	}
	out := filepath.Join(t.TempDir(), "schools.csv.gz")
	var stdout bytes.Buffer

	err := run([]string{"-data", dir, "-out", out}, &stdout)
	require.ErrorIs(t, err, bundled.ErrInputChanged, "undocumented inputs are refused")

	require.NoError(t, run([]string{"-data", dir, "-out", out, "-any-input"}, &stdout))
	assert.Contains(t, stdout.String(), "wrote "+out+": 1 schools")
	written, err := os.ReadFile(out)
	require.NoError(t, err)
	schools, err := bundled.Decode(bytes.NewReader(written))
	require.NoError(t, err)
	require.Len(t, schools, 1)
	assert.Equal(t, 0.5, *schools[0].AdmissionRate)

	require.NoError(t, run([]string{"-data", dir, "-out", out, "-any-input", "-check"}, &stdout))
	require.NoError(t, os.WriteFile(out, append(written, 0), 0o644))
	assert.ErrorContains(t, run([]string{"-data", dir, "-out", out, "-any-input", "-check"}, &stdout), "make catalogue")
}
