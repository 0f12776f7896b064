package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"mime/multipart"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"capsuled/gen"
)

// runCapsule manages capsules: capsule create|list|delete NAME.
func runCapsule(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: capsuled capsule create|list|delete [NAME] [flags]")
		return errUsage
	}
	sub, args := args[0], args[1:]
	fs := newFlags("capsule "+sub, stderr)
	var cf clientFlags
	cf.register(fs)
	desc := fs.String("description", "", "description (create)")
	if err := parse(fs, args); err != nil {
		return err
	}
	name := fs.Arg(0)
	c, err := cf.client()
	if err != nil {
		return err
	}
	switch sub {
	case "create":
		if name == "" {
			return errors.New("usage: capsuled capsule create NAME")
		}
		body := gen.CreateCapsuleRequest{Name: name}
		if *desc != "" {
			body.Description = desc
		}
		resp, err := c.CreateCapsuleWithResponse(ctx, body)
		if err != nil {
			return err
		}
		if resp.JSON201 == nil {
			return errorOf(resp.StatusCode(), resp.Body)
		}
		fmt.Fprintf(stdout, "created capsule %s\n", resp.JSON201.Name)
	case "list":
		resp, err := c.ListCapsulesWithResponse(ctx)
		if err != nil {
			return err
		}
		if resp.JSON200 == nil {
			return errorOf(resp.StatusCode(), resp.Body)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tITEMS\tCHUNKS\tCREATED\tDESCRIPTION")
		for _, k := range resp.JSON200.Data {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", k.Name, k.ItemCount, k.ChunkCount, k.CreatedAt.Format("2006-01-02 15:04"), k.Description)
		}
		return tw.Flush()
	case "delete":
		if name == "" {
			return errors.New("usage: capsuled capsule delete NAME")
		}
		resp, err := c.DeleteCapsuleWithResponse(ctx, name)
		if err != nil {
			return err
		}
		if resp.StatusCode() != 204 {
			return errorOf(resp.StatusCode(), resp.Body)
		}
		fmt.Fprintf(stdout, "deleted capsule %s\n", name)
	default:
		fmt.Fprintln(stderr, "usage: capsuled capsule create|list|delete [NAME] [flags]")
		return errUsage
	}
	return nil
}

// runAdd adds files and folders (recursively) to a capsule, waiting for each
// to be ingested, with a progress bar and a summary.
func runAdd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("add", stderr)
	var cf clientFlags
	cf.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	rest := fs.Args()
	if len(rest) < 2 {
		return errors.New("usage: capsuled add NAME PATH... [flags]")
	}
	name, paths := rest[0], rest[1:]
	var files []string
	for _, p := range paths {
		err := filepath.WalkDir(p, func(path string, d iofs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != p && strings.HasPrefix(d.Name(), ".") {
					return filepath.SkipDir
				}
				return nil
			}
			if d.Type().IsRegular() && !strings.HasPrefix(d.Name(), ".") {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	var ready, failed int
	var failures []string
	for i, path := range files {
		progress(stderr, i, len(files), path)
		it, err := uploadFile(ctx, c, name, path)
		if err != nil {
			progress(stderr, i, len(files), "")
			fmt.Fprintln(stderr)
			return fmt.Errorf("%s: %w", path, err)
		}
		switch it.Status {
		case gen.ItemStatusReady:
			ready++
		default:
			failed++
			reason := string(it.Status)
			if it.Error != nil {
				reason = *it.Error
			}
			failures = append(failures, fmt.Sprintf("  %s: %s", path, reason))
		}
	}
	progress(stderr, len(files), len(files), "")
	fmt.Fprintln(stderr)
	fmt.Fprintf(stdout, "%d ready, %d failed (of %d files)\n", ready, failed, len(files))
	for _, f := range failures {
		fmt.Fprintln(stdout, f)
	}
	if failed > 0 {
		return fmt.Errorf("%d files failed", failed)
	}
	return nil
}

// progress draws a one-line progress bar.
func progress(w io.Writer, done, total int, current string) {
	const width = 30
	n := width
	if total > 0 {
		n = done * width / total
	}
	if len(current) > 40 {
		current = "…" + current[len(current)-39:]
	}
	fmt.Fprintf(w, "\r[%s%s] %d/%d %-40s", strings.Repeat("#", n), strings.Repeat(" ", width-n), done, total, current)
}

// uploadFile streams one file as a multipart item and waits for it.
func uploadFile(ctx context.Context, c *gen.ClientWithResponses, capsule, path string) (*gen.Item, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	abs, _ := filepath.Abs(path)
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		err := mw.WriteField("uri", "file://"+filepath.ToSlash(abs))
		if err == nil {
			var part io.Writer
			if part, err = mw.CreateFormFile("file", filepath.Base(path)); err == nil {
				if _, err = io.Copy(part, f); err == nil {
					err = mw.Close()
				}
			}
		}
		pw.CloseWithError(err)
	}()
	wait, timeout := true, 600
	resp, err := c.AddItemWithBodyWithResponse(ctx, capsule, &gen.AddItemParams{Wait: &wait, WaitTimeoutSeconds: &timeout}, mw.FormDataContentType(), pr)
	if err != nil {
		return nil, err
	}
	switch {
	case resp.JSON201 != nil:
		return resp.JSON201, nil
	case resp.JSON200 != nil:
		return resp.JSON200, nil
	}
	return nil, errorOf(resp.StatusCode(), resp.Body)
}

// runQuery queries a capsule.
func runQuery(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("query", stderr)
	var cf clientFlags
	cf.register(fs)
	limit := fs.Int("limit", 10, "most results (1 to 100)")
	wishlist := fs.String("wishlist", "", "wishlist JSON, e.g. '{\"mode\":\"keyword\"}'")
	asJSON := fs.Bool("json", false, "print the raw JSON results")
	if err := parse(fs, args); err != nil {
		return err
	}
	rest := fs.Args()
	if len(rest) != 2 {
		return errors.New(`usage: capsuled query NAME "text" [--limit N] [--wishlist JSON] [--json]`)
	}
	body := map[string]any{"query": rest[1], "limit": *limit}
	if *wishlist != "" {
		var w map[string]any
		if err := json.Unmarshal([]byte(*wishlist), &w); err != nil {
			return fmt.Errorf("--wishlist: %w", err)
		}
		body["wishlist"] = w
	}
	raw, _ := json.Marshal(body)
	c, err := cf.client()
	if err != nil {
		return err
	}
	resp, err := c.QueryCapsuleWithBodyWithResponse(ctx, rest[0], "application/json", strings.NewReader(string(raw)))
	if err != nil {
		return err
	}
	if resp.JSON200 == nil {
		return errorOf(resp.StatusCode(), resp.Body)
	}
	if *asJSON {
		_, err := fmt.Fprintln(stdout, strings.TrimSpace(string(resp.Body)))
		return err
	}
	for i, h := range *resp.JSON200 {
		text := strings.Join(strings.Fields(h.Content), " ")
		if len(text) > 200 {
			text = text[:200] + "…"
		}
		fmt.Fprintf(stdout, "%2d. %.3f  %s #%d  (%s)\n    %s\n", i+1, h.Score, h.Uri, h.Idx, h.ItemId, text)
	}
	return nil
}
