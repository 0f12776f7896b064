package onnxexport

import (
	"encoding/binary"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers and enums from onnx.proto (onnx/onnx.proto, IR version 8).
const (
	// ModelProto
	modelIRVersion     = 1
	modelOpsetImport   = 8
	modelProducerName  = 2
	modelProducerVer   = 3
	modelDocString     = 6
	modelGraph         = 7
	modelMetadataProps = 14
	opsetDomain        = 1
	opsetVersion       = 2
	stringEntryKey     = 1
	stringEntryValue   = 2
	graphNode          = 1
	graphName          = 2
	graphInitializer   = 5
	graphInput         = 11
	graphOutput        = 12
	nodeInput          = 1
	nodeOutput         = 2
	nodeName           = 3
	nodeOpType         = 4
	nodeAttribute      = 5
	attrName           = 1
	attrF              = 2
	attrI              = 3
	attrInts           = 8
	attrType           = 20
	tensorDims         = 1
	tensorDataType     = 2
	tensorName         = 8
	tensorRawData      = 9
	valueInfoName      = 1
	valueInfoType      = 2
	typeTensorType     = 1
	tensorTypeElemType = 1
	tensorTypeShape    = 2
	shapeDim           = 1
	dimValue           = 1
	dimParam           = 2
	attrTypeFloat      = 1
	attrTypeInt        = 2
	attrTypeInts       = 7
	dataTypeFloat      = 1
	dataTypeUint8      = 2
	dataTypeInt8       = 3
	dataTypeInt64      = 7
	irVersion          = 8
	opsetVersion17     = 17
)

type msg []byte

func (m msg) str(field protowire.Number, s string) msg {
	m = protowire.AppendTag(m, field, protowire.BytesType)
	return protowire.AppendString(m, s)
}

func (m msg) bytes(field protowire.Number, b []byte) msg {
	m = protowire.AppendTag(m, field, protowire.BytesType)
	return protowire.AppendBytes(m, b)
}

func (m msg) varint(field protowire.Number, v int64) msg {
	m = protowire.AppendTag(m, field, protowire.VarintType)
	return protowire.AppendVarint(m, uint64(v))
}

func (m msg) float(field protowire.Number, f float32) msg {
	m = protowire.AppendTag(m, field, protowire.Fixed32Type)
	return protowire.AppendFixed32(m, math.Float32bits(f))
}

// attribute encoders

func attrInt(name string, v int64) msg {
	return msg(nil).str(attrName, name).varint(attrType, attrTypeInt).varint(attrI, v)
}

func attrFloat(name string, v float32) msg {
	return msg(nil).str(attrName, name).varint(attrType, attrTypeFloat).float(attrF, v)
}

func attrIntList(name string, vs ...int64) msg {
	m := msg(nil).str(attrName, name).varint(attrType, attrTypeInts)
	for _, v := range vs {
		m = m.varint(attrInts, v)
	}
	return m
}

// tensor encodes an initializer with raw little-endian data.
func tensor(name string, dataType int64, dims []int64, raw []byte) msg {
	m := msg(nil)
	for _, d := range dims {
		m = m.varint(tensorDims, d)
	}
	return m.varint(tensorDataType, dataType).str(tensorName, name).bytes(tensorRawData, raw)
}

func floatsRaw(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func int64sRaw(v []int64) []byte {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
	}
	return b
}

// valueInfo describes a graph input or output: a tensor with dims that are
// either fixed (int64) or named (string).
func valueInfo(name string, elemType int64, dims ...any) msg {
	shape := msg(nil)
	for _, d := range dims {
		dim := msg(nil)
		switch d := d.(type) {
		case int:
			dim = dim.varint(dimValue, int64(d))
		case string:
			dim = dim.str(dimParam, d)
		}
		shape = shape.bytes(shapeDim, dim)
	}
	tt := msg(nil).varint(tensorTypeElemType, elemType).bytes(tensorTypeShape, shape)
	typ := msg(nil).bytes(typeTensorType, tt)
	return msg(nil).str(valueInfoName, name).bytes(valueInfoType, typ)
}
