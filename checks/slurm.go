package checks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"

	"github.com/nodecheck/nodecheck/checks/node"
	"github.com/nodecheck/nodecheck/config/slurm"
)

// SlurmFiles loads slurm.conf and gres.conf through the node's facts once per run, on first
// use, so that a run whose checks need neither never reads them. A read that hangs (a stale
// NFS mount) holds only the checks that wait for it, each until its own deadline.
type SlurmFiles struct {
	facts  node.Facts
	search slurm.ConfSearch

	foundOnce node.OnceValue[slurm.Candidate]
	confOnce  node.OnceValue[*slurm.SlurmConf]
	gresOnce  node.OnceValue[*slurm.GresConf]

	mu       sync.Mutex
	found    *slurm.Candidate // set once the search ended with a file
	foundErr error
	data     []byte // the found file's content, read while searching
}

// NewSlurmFiles finds slurm.conf at explicit when it is set, else as Slurm does (see
// slurm.ConfSearch), with SLURM_CONF from getenv. gres.conf sits beside it.
func NewSlurmFiles(facts node.Facts, explicit string, getenv func(string) string) *SlurmFiles {
	return SlurmFilesFrom(facts, slurm.ConfSearch{Explicit: explicit, Getenv: getenv})
}

// newSlurmFiles searches as s says; its Stat is replaced by a read through facts.
// SlurmFilesFrom is the Slurm files found by s, read through facts.
func SlurmFilesFrom(facts node.Facts, s slurm.ConfSearch) *SlurmFiles {
	return &SlurmFiles{facts: facts, search: s}
}

// Found is the slurm.conf this run uses and why that one, found once per run: the facts
// have no stat for plain files, so telling whether a candidate exists means reading it,
// and the content read is kept for Conf.
func (s *SlurmFiles) Found(ctx context.Context) (slurm.Candidate, error) {
	return s.foundOnce.Get(ctx, func(ctx context.Context) (slurm.Candidate, error) {
		search := s.search
		var data []byte
		search.Stat = func(p string) error {
			b, err := s.facts.ReadFile(ctx, p)
			if err == nil {
				data = b
			}
			return err
		}
		c, err := slurm.FindConf(search)
		s.mu.Lock()
		defer s.mu.Unlock()
		if err != nil {
			s.foundErr = err
			return c, err
		}
		s.found, s.data = &c, data
		return c, nil
	})
}

// ConfPath is the path of the slurm.conf this run uses (Found).
func (s *SlurmFiles) ConfPath(ctx context.Context) (string, error) {
	c, err := s.Found(ctx)
	return c.Path, err
}

// Describe says which slurm.conf the run read and why, without waiting: "" while the search
// has not ended (or never started).
func (s *SlurmFiles) Describe() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.found != nil:
		return s.found.Path + " (" + s.found.From + ")"
	case s.foundErr != nil:
		return "none: " + s.foundErr.Error()
	}
	return ""
}

// Conf returns the parsed slurm.conf.
func (s *SlurmFiles) Conf(ctx context.Context) (*slurm.SlurmConf, error) {
	return s.confOnce.Get(ctx, func(ctx context.Context) (*slurm.SlurmConf, error) {
		c, err := s.Found(ctx)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		data := s.data
		s.mu.Unlock()
		return slurm.ParseSlurmConf(data, c.Path, s.reader(ctx))
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

// nodeConfLine is slurm.conf and the run's node's NodeName line, for a check that compares the
// node with it; where it cannot be had, ok is false and res is the check's result: a read that
// ran out of time fails (a hung slurm.conf, remedy as faultSlurmTimeout), any other failure,
// or a node slurm.conf does not define, is an error.
func nodeConfLine(ctx context.Context, env *Env) (conf *slurm.SlurmConf, nl slurm.NodeLine, res Result, ok bool) {
	conf, err := env.Slurm.Conf(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nl, Result{Status: StatusFail, Summary: "timed out reading slurm.conf", Err: err, Remedy: remedyOf(faultSlurmTimeout)}, false
		}
		return nil, nl, Result{Status: StatusError, Summary: "read slurm.conf: " + err.Error(), Err: err}, false
	}
	if nl, ok = conf.Node(env.Node); !ok {
		err := fmt.Errorf("node %s is not defined in %s", env.Node, conf.Path)
		return nil, nl, Result{Status: StatusError, Summary: err.Error(), Err: err}, false
	}
	return conf, nl, Result{}, true
}
