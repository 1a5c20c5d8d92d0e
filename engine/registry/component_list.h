#pragma once
// Every method, encoder and tokenizer of the product, one entry each. An entry NAME needs, in the component's
// folder, its registration `NAME_method_info()` / `NAME_encoder_info()` / `NAME_tokenizer_info()` (torch-free:
// name, help, option groups; a tokenizer's carries its factory, being plain C++) and, for methods and encoders,
// its factory `make_NAME_method` / `make_NAME_encoder` (the torch side). Adding one is its folder or file and one
// entry here; nothing else names it.
#define XMC_FOR_EACH_METHOD(X) X(dexml) X(ngame) X(unidec) X(depsl) X(irene)
#define XMC_FOR_EACH_ENCODER(X) X(bow) X(bert)
#define XMC_FOR_EACH_TOKENIZER(X) X(words) X(wordpiece)
