package bert

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLoadConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		json    string
		wantErr bool
	}{
		{"minilm", `{"model_type":"bert","hidden_act":"gelu","hidden_size":384,"num_attention_heads":12,"num_hidden_layers":6,"intermediate_size":1536,"vocab_size":30522,"max_position_embeddings":512,"type_vocab_size":2,"layer_norm_eps":1e-12}`, false},
		{"roberta", `{"model_type":"roberta","hidden_size":384,"num_attention_heads":12,"num_hidden_layers":6,"intermediate_size":1536,"vocab_size":1,"max_position_embeddings":1}`, true},
		{"relu", `{"hidden_act":"relu","hidden_size":384,"num_attention_heads":12,"num_hidden_layers":6,"intermediate_size":1536,"vocab_size":1,"max_position_embeddings":1}`, true},
		{"heads", `{"hidden_size":100,"num_attention_heads":12,"num_hidden_layers":6,"intermediate_size":1536,"vocab_size":1,"max_position_embeddings":1}`, true},
		{"garbage", `{`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(tt.json), 0o600); err != nil {
				t.Fatal(err)
			}
			c, err := LoadConfig(dir)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && c.HeadDim() != 32 {
				t.Errorf("HeadDim = %d", c.HeadDim())
			}
		})
	}
}

func TestLoadModel(t *testing.T) {
	t.Parallel()
	dir := os.Getenv("CAPSULED_MODEL_DIR")
	if dir == "" {
		t.Skip("CAPSULED_MODEL_DIR is not set: run .ci/fetch-model.sh and source .cache/env.sh")
	}
	w, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Layers) != 6 || len(w.Word) != 30522*384 || w.Layers[5].Output.In != 1536 {
		t.Fatalf("unexpected shapes: %d layers, %d word", len(w.Layers), len(w.Word))
	}
}
