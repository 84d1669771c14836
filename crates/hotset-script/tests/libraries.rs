//! cjson, cmsgpack, struct and bit: replies and error texts as redis-server 7.0.15 gave them
//! for the same scripts (and Redis' own test cases for these libraries).

mod common;

use common::{FakeHost, bulk, engine, eval, sha1};
use hotset_script::Value;

fn run_cases(cases: &[(&str, Value)]) {
    let (mut engine, _) = engine();
    let mut host = FakeHost::new();
    for (body, expected) in cases {
        assert_eq!(eval(&mut engine, &mut host, body).as_ref(), Ok(expected), "{body}");
    }
}

fn run_errors(cases: &[(&str, &str)]) {
    let (mut engine, _) = engine();
    let mut host = FakeHost::new();
    for (body, message) in cases {
        let expected = format!("ERR user_script:1: {message} script: {}, on @user_script:1.", sha1(body));
        assert_eq!(eval(&mut engine, &mut host, body), Err(expected), "{body}");
    }
}

fn ints(values: &[i64]) -> Value {
    Value::Array(values.iter().map(|&value| Value::Int(value)).collect())
}

#[test]
fn cjson_encodes_like_redis() {
    run_cases(&[
        ("return cjson.encode({1,2,3,{a=1}})", bulk("[1,2,3,{\"a\":1}]")),
        (
            "return cjson.encode({a='x/y\"z\\\\', b=0.1, c=1e20, d=-0.0, e=true, f=cjson.null})",
            bulk("{\"a\":\"x\\/y\\\"z\\\\\",\"c\":1e+20,\"b\":0.1,\"e\":true,\"d\":-0,\"f\":null}"),
        ),
        ("return cjson.encode('\\1\\127\\200')", Value::Bulk(b"\"\\u0001\\u007f\xc8\"".to_vec())),
        ("return cjson.encode({[1]=1,[3]=3})", bulk("[1,null,3]")),
        ("return cjson.encode({})", bulk("{}")),
        ("return cjson.encode({[1.5]=1})", bulk("{\"1.5\":1}")),
        ("return cjson.encode({[0]='a'})", bulk("{\"0\":\"a\"}")),
        ("return cjson.encode({[1]='a', b='c'})", bulk("{\"1\":\"a\",\"b\":\"c\"}")),
        ("return cjson.encode(2^53)", bulk("9.007199254741e+15")),
        ("return cjson.encode(123456789012)", bulk("123456789012")),
        ("return cjson.encode(-1e-7)", bulk("-1e-07")),
        (
            "return {cjson.encode_number_precision(3), cjson.encode(1/3), cjson.encode_number_precision(14)}",
            Value::Array(vec![Value::Int(3), bulk("0.333"), Value::Int(14)]),
        ),
        (
            "cjson.encode_invalid_numbers(true); local r = cjson.encode({1/0, -1/0, 0/0}); cjson.encode_invalid_numbers(false); return r",
            bulk("[inf,-inf,nan]"),
        ),
        (
            "cjson.encode_invalid_numbers('null'); local r = cjson.encode({1/0, 0/0}); cjson.encode_invalid_numbers(false); return r",
            bulk("[null,null]"),
        ),
        ("return {cjson.encode_sparse_array()}", Value::Array(vec![Value::Null, Value::Int(2), Value::Int(10)])),
        (
            "return {cjson.encode_keep_buffer(), cjson.encode_max_depth(), cjson.decode_max_depth(), cjson.decode_invalid_numbers()}",
            ints(&[1, 1000, 1000, 1]),
        ),
        ("return cjson._NAME .. ' ' .. cjson._VERSION", bulk("cjson 2.1.0")),
        (
            "return cjson.encode(cjson.decode('{\"a\":[1,2,{\"b\":null}],\"c\":\"d\"}'))",
            bulk("{\"a\":[1,2,{\"b\":null}],\"c\":\"d\"}"),
        ),
    ]);
}

#[test]
fn cjson_decodes_like_redis() {
    run_cases(&[
        (
            "return table.concat(cjson.decode('[0.0, -5e3, -1, 0.3e-3, 1023.2, 0e10]'), ' ')",
            bulk("0 -5000 -1 0.0003 1023.2 0"),
        ),
        (
            "local d = cjson.decode('{\"keya\": \"a\", \"keyb\": \"b\"}') return {d.keya, d.keyb}",
            Value::Array(vec![bulk("a"), bulk("b")]),
        ),
        ("return cjson.decode('0x10')", Value::Int(16)),
        ("return cjson.decode('+1')", Value::Int(1)),
        ("return cjson.decode('007')", Value::Int(7)),
        ("return cjson.decode('[Infinity]')", ints(&[i64::MIN])),
        ("return tostring(cjson.decode('nan'))", bulk("nan")),
        ("return cjson.decode('\"\\\\u00e9\\\\ud83d\\\\ude00\"')", Value::Bulk("é😀".as_bytes().to_vec())),
        ("return cjson.decode('\"\\\\u0000a\"')", bulk("\0a")),
        ("return cjson.decode('[1]\\0zz')", ints(&[1])),
        ("return type(cjson.decode('null'))", bulk("userdata")),
        ("return cjson.decode('null') == cjson.null", Value::Int(1)),
        ("return tostring(cjson.null)", bulk("userdata: (nil)")),
        ("return cjson.decode(12)", Value::Int(12)),
        ("return cjson.decode('[[[[1]]]]')[1][1][1][1]", Value::Int(1)),
    ]);
    run_errors(&[
        ("return cjson.decode('bad')", "Expected value but found invalid token at character 1"),
        ("return cjson.decode('[1,')", "Expected value but found T_END at character 4"),
        ("return cjson.decode('{\"a\" 1}')", "Expected colon but found T_NUMBER at character 6"),
        ("return cjson.decode('{1:2}')", "Expected object key string but found T_NUMBER at character 2"),
        ("return cjson.decode('[1] x')", "Expected the end but found invalid token at character 5"),
        ("return cjson.decode('\"\\\\u12\"')", "Expected value but found invalid unicode escape code at character 2"),
        ("return cjson.decode('\"\\\\ud83d\"')", "Expected value but found invalid unicode escape code at character 2"),
        ("return cjson.decode('\"\\\\x\"')", "Expected value but found invalid escape code at character 2"),
        ("return cjson.decode('\"abc')", "Expected value but found unexpected end of string at character 5"),
        ("return cjson.decode('')", "Expected value but found T_END at character 1"),
        ("return cjson.decode('-')", "Expected value but found invalid number at character 1"),
        ("return cjson.decode('1e')", "Expected the end but found invalid token at character 2"),
        ("return cjson.decode('.5')", "Expected value but found invalid token at character 1"),
        ("return cjson.decode()", "bad argument #1 to 'decode' (expected 1 argument)"),
        ("return cjson.decode({})", "bad argument #1 to 'decode' (string expected, got table)"),
        ("return cjson.encode({[1]=1,[20]=3})", "Cannot serialise table: excessively sparse array"),
        ("return cjson.encode({[true]=1})", "Cannot serialise boolean: table key must be a number or string"),
        ("return cjson.encode(function() end)", "Cannot serialise function: type not supported"),
        ("return cjson.encode(1/0)", "Cannot serialise number: must not be NaN or Inf"),
        ("return cjson.encode()", "bad argument #1 to 'encode' (expected 1 argument)"),
        ("return cjson.encode(3, 4)", "bad argument #1 to 'encode' (expected 1 argument)"),
        ("local t = {} t[1] = t return cjson.encode(t)", "Cannot serialise, excessive nesting (1001)"),
        (
            "return cjson.encode_invalid_numbers('foo')",
            "bad argument #1 to 'encode_invalid_numbers' (invalid option 'foo')",
        ),
        (
            "return cjson.encode_max_depth(0)",
            "bad argument #1 to 'encode_max_depth' (expected integer between 1 and 2147483647)",
        ),
    ]);
}

#[test]
fn cjson_smoke_test_from_redis() {
    let (mut engine, _) = engine();
    let mut host = FakeHost::new();
    let body = r#"
        local some_map = {s1="Some string", n1=100, a1={"Some","String","Array"}, nil1=nil, b1=true, b2=false}
        local encoded = cjson.encode(some_map)
        local decoded = cjson.decode(encoded)
        assert(table.concat(some_map) == table.concat(decoded))
        cjson.encode_keep_buffer(false)
        encoded = cjson.encode(some_map)
        decoded = cjson.decode(encoded)
        assert(table.concat(some_map) == table.concat(decoded))
        local table1 = {one="one", [1]="one"}
        encoded = cjson.encode(table1)
        decoded = cjson.decode(encoded)
        assert(decoded["one"] == table1["one"])
        assert(decoded["1"] == table1[1])
        local array1 = {[1]="one", [2]="two"}
        encoded = cjson.encode(array1)
        decoded = cjson.decode(encoded)
        assert(table.concat(array1) == table.concat(decoded))
        local invalid_map = {}
        invalid_map[false] = "false"
        local ok, encoded = pcall(cjson.encode, invalid_map)
        assert(ok == false)
        cjson.encode_max_depth(1)
        ok, encoded = pcall(cjson.encode, some_map)
        assert(ok == false)
        cjson.decode_max_depth(1)
        ok, decoded = pcall(cjson.decode, '{"obj": {"array": [1,2,3,4]}}')
        assert(ok == false)
        ok, encoded = pcall(cjson.encode, {num1=0/0})
        assert(ok == false)
        cjson.encode_invalid_numbers(true)
        ok, encoded = pcall(cjson.encode, {num1=0/0})
        assert(ok == true)
        cjson.decode_max_depth(1000)
        cjson.encode_max_depth(1000)
        cjson.encode_invalid_numbers(false)
        local ok, e = pcall(cjson.decode, 'bad')
        return e
    "#;
    assert_eq!(eval(&mut engine, &mut host, body), Ok(bulk("Expected value but found invalid token at character 1")));
    // 1000 levels decode (the default limit), 1001 do not.
    let deep = format!("return cjson.decode('{}1{}')[1][1][1]", "[".repeat(1000), "]".repeat(1000));
    assert!(eval(&mut engine, &mut host, &deep).is_ok());
    let deeper = format!("return cjson.decode('{}1{}')", "[".repeat(1001), "]".repeat(1001));
    assert!(
        eval(&mut engine, &mut host, &deeper)
            .unwrap_err()
            .contains("Found too many nested data structures (1001) at character 1001")
    );
}

#[test]
fn cmsgpack_like_redis() {
    let hex = |expression: &str| {
        format!(
            "local s = {expression} local h = '' for i = 1, #s do h = h .. string.format('%02x', s:byte(i)) end return h"
        )
    };
    run_cases(&[
        (&hex("cmsgpack.pack(0.1)"), bulk("cb3fb999999999999a")),
        (&hex("cmsgpack.pack(-1099511627776)"), bulk("d3ffffff0000000000")),
        (
            &hex("cmsgpack.pack(1.5, -1, 255, 65536, 2^40, -2^40, -33, {}, {a=1}, nil, false)"),
            bulk("ca3fc00000ffccffce00010000cf0000010000000000d3ffffff0000000000d0df9081a16101c0c2"),
        ),
        ("return cmsgpack.pack(string.rep('x', 40)):byte(1)", Value::Int(217)),
        ("return cmsgpack.unpack(cmsgpack.pack({1,2,{a=1}}))[3].a", Value::Int(1)),
        (
            "return {cmsgpack.unpack(cmsgpack.pack(1, 'a', true))}",
            Value::Array(vec![Value::Int(1), bulk("a"), Value::Int(1)]),
        ),
        ("return {cmsgpack.unpack('')}", Value::Array(vec![])),
        ("return {cmsgpack.unpack_limit('\\1\\2\\3', 2)}", ints(&[2, 1, 2])),
        ("return {cmsgpack.unpack_limit('\\1\\2\\3', 0, 1)}", ints(&[1])),
    ]);
    run_errors(&[
        ("return cmsgpack.pack()", "bad argument #0 to 'pack' (MessagePack pack needs input.)"),
        ("return cmsgpack.unpack('\\193')", "Bad data format in input."),
        ("return cmsgpack.unpack('\\205\\1')", "Missing bytes in input."),
        ("return cmsgpack.unpack_one('\\1\\2', 5)", "Start offset 5 greater than input length 2."),
    ]);
}

#[test]
fn cmsgpack_circular_references_and_smoke_test_from_redis() {
    let (mut engine, _) = engine();
    let mut host = FakeHost::new();
    let body = r#"
        local a = {x=nil,y=5}
        local b = {x=a}
        a['x'] = b
        local encoded = cmsgpack.pack(a)
        local h = ""
        for i = 1, #encoded do h = h .. string.format("%02x",string.byte(encoded,i)) end
        local re = cmsgpack.unpack(encoded)
        assert(re.x.x.x.x.x.x.x.x.x.x.x.x.x.x.y == re.y)
        assert(re.x.x.x.x.x.x.x.x.x.x.x.x.x.x.x)
        assert(re.x.x.x.x.x.x.x.x.x.x.x.x.x.x.x.x == nil)
        return {h, re.x.x.x.x.x.x.x.x.y == re.y, re.y == 5}
    "#;
    let expected = "82a17905a17881a17882a17905a17881a17882a17905a17881a17882a17905a17881a17882a17905a17881a17882a17905a17881a17882a17905a17881a17882a17905a17881a178c0";
    assert_eq!(
        eval(&mut engine, &mut host, body),
        Ok(Value::Array(vec![bulk(expected), Value::Int(1), Value::Int(1)]))
    );
    let body = r#"
        local str_lt_32 = string.rep("x", 30)
        local str_lt_255 = string.rep("x", 250)
        local str_lt_65535 = string.rep("x", 65530)
        local str_long = string.rep("x", 100000)
        local array_big = {}
        for i=1, 100000 do array_big[i] = i end
        local map_big = {}
        for i=1, 100000 do map_big[tostring(i)] = i end
        local some_map = {s1=str_lt_32, s2=str_lt_255, s3=str_lt_65535, s4=str_long, d1=0.1, i1=1, i2=250, i3=65530,
            i4=100000, i5=2^40, i6=-1, i7=-120, i8=-32000, i9=-100000, i10=-3147483648, a1={1, 2, 3, 4, 5},
            a2={1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18}, a3=array_big, m1={a=1, b=2}, m2=map_big,
            b1=false, b2=true, n=nil}
        local encoded = cmsgpack.pack(some_map)
        local decoded = cmsgpack.unpack(encoded)
        assert(decoded.i10 == -3147483648 and decoded.a3[100000] == 100000 and decoded.m2['777'] == 777 and decoded.d1 == 0.1)
        local offset, decoded_one = cmsgpack.unpack_one(encoded, 0)
        assert(offset == -1 and decoded_one.s4 == str_long)
        local encoded_multiple = cmsgpack.pack(str_lt_32, str_lt_255, str_lt_65535, str_long)
        local offset, obj = cmsgpack.unpack_limit(encoded_multiple, 1, 0)
        assert(obj == str_lt_32)
        offset, obj = cmsgpack.unpack_limit(encoded_multiple, 1, offset)
        assert(obj == str_lt_255)
        offset, obj = cmsgpack.unpack_limit(encoded_multiple, 1, offset)
        assert(obj == str_lt_65535)
        offset, obj = cmsgpack.unpack_limit(encoded_multiple, 1, offset)
        assert(obj == str_long)
        assert(offset == -1)
        return 'ok'
    "#;
    assert_eq!(eval(&mut engine, &mut host, body), Ok(bulk("ok")));
}

#[test]
fn struct_like_redis() {
    run_cases(&[
        ("return {struct.pack('>i2', 258):byte(1, -1)}", ints(&[1, 2])),
        ("return {struct.unpack('<h', '\\255\\255')}", ints(&[-1, 3])),
        ("return {struct.unpack('>I4', '\\0\\0\\1\\0')}", ints(&[256, 5])),
        ("return struct.size('i4d!8')", Value::Int(12)),
        ("return {struct.unpack('s', 'abc\\0def')}", Value::Array(vec![bulk("abc"), Value::Int(5)])),
        ("return struct.pack('c0', 'hello')", bulk("hello")),
        ("return {struct.unpack('bc0', '\\3abc')}", Value::Array(vec![bulk("abc"), Value::Int(5)])),
        ("return {struct.unpack('>d', struct.pack('>d', 0.1))}", ints(&[0, 9])),
        ("return struct.unpack('>d', struct.pack('>d', 0.1)) == 0.1", Value::Int(1)),
        ("return struct.pack('<bxh', 1, 2)", Value::Bulk(vec![1, 0, 2, 0])),
        ("return {struct.unpack('<!4 b i', struct.pack('<!4 b i', 7, 9))}", ints(&[7, 9, 9])),
    ]);
    run_errors(&[
        ("return struct.pack('z', 1)", "bad argument #1 to 'pack' (invalid format option 'z')"),
        ("return struct.size('s')", "bad argument #1 to 'size' (option 's' has no fixed size)"),
        ("return {struct.unpack('i4', 'ab')}", "bad argument #2 to 'unpack' (data string too short)"),
        ("return struct.pack('!3i', 1)", "alignment 3 is not a power of 2"),
    ]);
}

#[test]
fn bit_like_redis() {
    run_cases(&[
        (
            "return {bit.tohex(65535), bit.tohex(-1, -4), bit.tohex(1, 12)}",
            Value::Array(vec![bulk("0000ffff"), bulk("FFFF"), bulk("00000001")]),
        ),
        (
            "return {bit.bnot(0), bit.lshift(1, 31), bit.rshift(-1, 28), bit.arshift(-256, 4), bit.rol(0x12345678, 8), bit.ror(0x12345678, 8), bit.bswap(0x12345678), bit.tobit(2^32 + 3)}",
            ints(&[-1, -2147483648, 15, -16, 878082066, 2014458966, 2018915346, 3]),
        ),
        ("return bit.tohex('10')", bulk("0000000a")),
        (
            "assert(bit.tobit(1) == 1); assert(bit.band(1) == 1); assert(bit.bxor(1,2) == 3); assert(bit.bor(1,2,4,8,16,32,64,128) == 255) return 1",
            Value::Int(1),
        ),
    ]);
    run_errors(&[
        ("return bit.band()", "bad argument #1 to 'band' (number expected, got no value)"),
        ("return bit.band(1, 'x')", "bad argument #2 to 'band' (number expected, got string)"),
    ]);
}
