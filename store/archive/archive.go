// Package archive is the format of zizq's backups, one for every store, so
// that `zizq restore` reads any store's backup into either store.
//
// An archive is a tar.gz holding one file, DBPath: a database of the SQLite
// store's schema (its user_version is the archive's version; the SQLite
// store migrates an older one when it opens it). This package owns the
// container (Write, Check, Unpack) and what goes into the database and
// comes back out of it (Copy): the store's whole content as store ops, in
// an order any store accepts. The database itself is made and read by a
// Body, which the SQLite store provides; a store that is not SQLite takes
// one in its options, so that no backend imports another.
package archive

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// DBPath is where the database file sits inside an archive: the layout of
// a zizq root directory, so that an unpacked archive is one.
const DBPath = "zizq-root/data/zizq.db"

// sqliteMagic opens every SQLite database file: a bare database given in
// place of an archive.
var sqliteMagic = []byte("SQLite format 3\x00")

// Write writes the database file at path, whole, as an archive; at is the
// modification time of its entries (when the snapshot was taken).
func Write(w io.Writer, path string, at time.Time) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("write backup: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("write backup: %w", err)
	}
	zw, err := gzip.NewWriterLevel(w, gzip.BestSpeed)
	if err != nil {
		return fmt.Errorf("write backup: %w", err)
	}
	tw := tar.NewWriter(zw)
	for _, dir := range []string{"zizq-root/", "zizq-root/data/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: 0o750, ModTime: at}); err != nil {
			return fmt.Errorf("write backup: %w", err)
		}
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: DBPath, Mode: 0o640, Size: info.Size(), ModTime: at}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("write backup: %w", err)
	}
	if _, err := io.Copy(tw, f); err != nil {
		return fmt.Errorf("write backup: %w", err)
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("write backup: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("write backup: %w", err)
	}
	return nil
}

// Check reads an archive to its end and checks that it is whole: gzip and
// tar intact, holding DBPath. It returns the size of the database file
// inside.
func Check(r io.Reader) (int64, error) {
	var size int64
	err := read(r, func(db io.Reader, hdrSize int64) error {
		n, err := copyExactly(io.Discard, db, hdrSize)
		size = n
		return err
	})
	if err != nil {
		return 0, err
	}
	return size, nil
}

// Unpack copies the database of a backup to w: r is an archive, or a bare
// SQLite database file, which is copied as it is. An archive is read to its
// end, so a truncated or corrupt one fails; what Unpack wrote by then is
// not a database to keep.
func Unpack(r io.Reader, w io.Writer) error {
	br := bufio.NewReader(r)
	head, _ := br.Peek(len(sqliteMagic))
	if bytes.Equal(head, sqliteMagic) {
		_, err := io.Copy(w, br)
		return err
	}
	return read(br, func(db io.Reader, size int64) error {
		_, err := copyExactly(w, db, size)
		return err
	})
}

// copyExactly copies r to w and fails unless it was size bytes long.
func copyExactly(w io.Writer, r io.Reader, size int64) (int64, error) {
	n, err := io.Copy(w, r)
	if err == nil && n != size {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// read calls fn with the database file of an archive; every other entry is
// skipped. The whole archive is read, so a truncated or corrupt one fails.
func read(r io.Reader, fn func(db io.Reader, size int64) error) error {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("not a zizq backup: %w", err)
	}
	tr := tar.NewReader(zr)
	found := false
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("read backup: %w", err)
		}
		name := strings.TrimPrefix(hdr.Name, "./")
		if name != DBPath || hdr.Typeflag != tar.TypeReg {
			continue
		}
		if found {
			return fmt.Errorf("read backup: %s appears twice", DBPath)
		}
		found = true
		if err := fn(tr, hdr.Size); err != nil {
			return fmt.Errorf("read backup: %w", err)
		}
	}
	if _, err := io.Copy(io.Discard, zr); err != nil { // the gzip checksum
		return fmt.Errorf("read backup: %w", err)
	}
	if err := zr.Close(); err != nil {
		return fmt.Errorf("read backup: %w", err)
	}
	if !found {
		return fmt.Errorf("not a zizq backup: it holds no %s", DBPath)
	}
	return nil
}
