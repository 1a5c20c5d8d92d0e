#pragma once
// Every method and encoder of the product, one entry each. An entry NAME needs, in the component's folder,
// its registration `NAME_method_info()` / `NAME_encoder_info()` (torch-free: name, help, option groups) and its
// factory `make_NAME_method` / `make_NAME_encoder` (the torch side). Adding a method or an encoder is its folder
// and one entry here; nothing else names it.
#define XMC_FOR_EACH_METHOD(X) X(dexml) X(ngame) X(unidec) X(depsl) X(irene)
#define XMC_FOR_EACH_ENCODER(X) X(bow) X(bert)
