package main

import (
	"errors"
	"io/fs"
	"os"
)

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
