package checks

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config/slurm"
)

// SlurmFiles loads slurm.conf and gres.conf through the node's facts once per run, on first
// use, so that a run whose checks need neither never reads them. A read that hangs (a stale
// NFS mount) holds only the checks that wait for it, each until its own deadline.
type SlurmFiles struct {
	facts    node.Facts
	explicit string
	getenv   func(string) string

	pathOnce node.OnceValue[string]
	confOnce node.OnceValue[*slurm.SlurmConf]
	gresOnce node.OnceValue[*slurm.GresConf]
}

// NewSlurmFiles finds slurm.conf as Slurm does: explicit path, then SLURM_CONF (from getenv),
// then slurmd's configless cache, then /etc/slurm/slurm.conf. gres.conf sits beside it.
func NewSlurmFiles(facts node.Facts, explicit string, getenv func(string) string) *SlurmFiles {
	return &SlurmFiles{facts: facts, explicit: explicit, getenv: getenv}
}

// ConfPath is the slurm.conf this run uses, found once per run: the facts have no stat for
// plain files, so telling whether a candidate exists means reading it.
func (s *SlurmFiles) ConfPath(ctx context.Context) (string, error) {
	return s.pathOnce.Get(ctx, func(ctx context.Context) (string, error) {
		return slurm.FindSlurmConf(s.explicit, s.getenv, func(p string) bool {
			_, err := s.facts.ReadFile(ctx, p)
			return err == nil
		})
	})
}

// Conf returns the parsed slurm.conf.
func (s *SlurmFiles) Conf(ctx context.Context) (*slurm.SlurmConf, error) {
	return s.confOnce.Get(ctx, func(ctx context.Context) (*slurm.SlurmConf, error) {
		path, err := s.ConfPath(ctx)
		if err != nil {
			return nil, err
		}
		return slurm.LoadSlurmConf(path, s.reader(ctx))
	})
}

// GresPath is the gres.conf beside slurm.conf.
func (s *SlurmFiles) GresPath(ctx context.Context) (string, error) {
	path, err := s.ConfPath(ctx)
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(path), "gres.conf"), nil
}

// Gres returns the parsed gres.conf; an absent file gives an error wrapping fs.ErrNotExist.
func (s *SlurmFiles) Gres(ctx context.Context) (*slurm.GresConf, error) {
	return s.gresOnce.Get(ctx, func(ctx context.Context) (*slurm.GresConf, error) {
		path, err := s.GresPath(ctx)
		if err != nil {
			return nil, err
		}
		return slurm.LoadGresConf(path, s.reader(ctx))
	})
}

func (s *SlurmFiles) reader(ctx context.Context) slurm.ReadFileFunc {
	return func(path string) ([]byte, error) { return s.facts.ReadFile(ctx, path) }
}

// isNotExist reports whether err means "the file is not there".
func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
