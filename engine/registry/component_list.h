#pragma once
// Every method, encoder, tokenizer, loss, index kind, batch order and kind of negatives of the product, one entry each. An entry NAME needs, in the
// component's folder:
//   method, encoder: its registration `NAME_method_info()` / `NAME_encoder_info()` (torch-free: name, help,
//     option groups) and its factory `make_NAME_method` / `make_NAME_encoder` (the torch side);
//   tokenizer: `NAME_tokenizer_info()` (plain C++: name, help, the files it reads, its factory);
//   loss: `NAME_loss_entry()` (its functions; the config's `loss` takes NAME, listed from here);
//   index: `NAME_index_kind()` (how its descriptions read, what it makes of them: engine/index/index_kind.h);
//   batch order (the config's sampler.type): `NAME_batch_order_info()` (torch-free: name, help, option groups,
//     plot marks) and `make_NAME_batch_order` (the torch side: engine/sampler/batch_order.h);
//   negatives (the config's `negatives`): `NAME_negatives_kind()` (its traits: engine/sampler/negatives_kind.h).
// Adding one is its folder or file and one entry here; nothing else names it.
#define XMC_FOR_EACH_METHOD(X) X(dexml) X(ngame) X(unidec) X(depsl) X(irene) X(xrlinear)
#define XMC_FOR_EACH_ENCODER(X) X(bow) X(bert) X(decoder)
#define XMC_FOR_EACH_TOKENIZER(X) X(words) X(wordpiece) X(bpe)
#define XMC_FOR_EACH_LOSS(X) X(triplet) X(softmax) X(decoupled_softmax) X(softtopk) X(supcon) X(bce)
#define XMC_FOR_EACH_INDEX(X) X(exact) X(ivf) X(hnsw) X(faiss)
#define XMC_FOR_EACH_BATCH_ORDER(X) X(random) X(cluster)
#define XMC_FOR_EACH_NEGATIVES(X) X(inbatch) X(hard) X(all)
