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

	"capsuled/internal/embed/onnxexport"
)

func main() {
	from := flag.String("from", "", "sentence-transformers folder with config.json, model.safetensors, vocab.txt")
	to := flag.String("to", "", "output folder for model.onnx and the tokenizer files")
	int8 := flag.Bool("int8", false, "also write the dynamic int8 model_quantized.onnx")
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
		if err := onnxexport.Convert(*from, *to, onnxexport.Options{Quantize: true}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
