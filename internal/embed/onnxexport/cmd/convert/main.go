// Command convert turns a sentence-transformers BERT folder (safetensors)
// into ONNX models with onnxexport: the documented conversion tool until
// `capsuled models convert` wires the same function.
//
//	go run ./internal/embed/onnxexport/cmd/convert --from ST_DIR --to ONNX_DIR [--int8]
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"capsuled/internal/embed/onnxexport"
)

func main() {
	from := flag.String("from", "", "sentence-transformers folder with config.json, model.safetensors, vocab.txt")
	to := flag.String("to", "", "output folder for model.onnx and the tokenizer files")
	int8 := flag.Bool("int8", false, "also write the dynamic int8 model_quantized.onnx")
	keep := flag.String("int8-keep-fp32", "", "comma-separated dense-layer name suffixes left in fp32 in the int8 model (e.g. output.dense)")
	flag.Parse()
	if *from == "" || *to == "" {
		flag.Usage()
		os.Exit(2)
	}
	if err := onnxexport.Convert(*from, *to, onnxexport.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *int8 {
		if err := onnxexport.Convert(*from, *to, onnxexport.Options{Quantize: true, KeepFP32: splitList(*keep)}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
